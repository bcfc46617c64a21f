#!/usr/bin/env bash
# The model benchmark of docs/BENCHMARKS.md (issue 12): one training step (forward, backward,
# AdamW) on 1 rank x 2 threads, shardlab and PyTorch eager (bf16 through torch.autocast) measured
# one after the other by `shardlab bench step --peer pytorch` — preset tiny at micro-batch 8 x 256
# and GPT-2 124M at 4 x 256, fp32 and bf16 — with GFLOP/s against the GEMM rate measured in the
# same run; then the activation bytes the tracker measured, checkpointed and not.
# Writes bench/results/model_step.{jsonl,png} (another name: NAME=model_step_avx512, one per CPU
# kind). Target: shardlab >= 1.5x PyTorch in every row.
# Usage: [NAME=...] bench/model_step_vs_torch.sh [--quick]   (--quick: tiny only)
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/${NAME:-model_step}.jsonl
mkdir -p bench/results
: > "$out"
build/shardlab device | sed -n '1,4p' >&2
row() { # MODEL ARGS...: one side-by-side row
  local model=$1
  shift
  echo "$model $*" >&2
  build/shardlab bench step "$@" --threads 2 --peer pytorch --json |
    sed "s/^{/{\"model\":\"$model\",/" | tee -a "$out"
}
for p in fp32 bf16; do
  row tiny --preset tiny --batch 8 --precision $p --steps 10 --warmup 2
done
if [ "${1:-}" != --quick ]; then
  # PyTorch 1.13's bf16 autocast on a CPU without AVX512-BF16 takes minutes per GPT-2 step: one
  # timed step after one warm-up step keeps this run under half an hour.
  row gpt2 --preset gpt2 --batch 4 --seq-len 256 --precision fp32 --steps 3 --warmup 1
  row gpt2 --preset gpt2 --batch 4 --seq-len 256 --precision bf16 --steps 1 --warmup 1
fi
for ck in none all; do
  echo "tiny activations, checkpoint $ck" >&2
  build/shardlab bench step --preset tiny --batch 8 --precision bf16 --threads 2 --steps 1 --warmup 0 --checkpoint $ck --json \
    | sed 's/^{/{"model":"tiny-activations",/' | tee -a "$out"
done
/usr/bin/python3 tools/plot_step_bench.py "$out" "${out%.jsonl}.png"
