#!/usr/bin/env bash
# The model benchmark of docs/BENCHMARKS.md, both peers in one run: one training step (forward,
# backward, AdamW) on 1 rank, 2 threads — preset tiny at micro-batch 8 x 256, fp32 and bf16,
# shardlab against PyTorch eager (bf16 through torch.autocast); then preset gpt2 (124M) at
# 4 x 256; then the activation bytes the tracker measured, checkpointed and not.
# Writes bench/results/model_step.{jsonl,png}.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/model_step.jsonl
mkdir -p bench/results
: > "$out"
tiny=(--layers 4 --hidden 256 --heads 4 --vocab 256 --seq 256)
for p in fp32 bf16; do
  echo "tiny $p: shardlab, then PyTorch eager" >&2
  build/shardlab bench step --preset tiny --batch 8 --precision $p --threads 2 --steps 10 --json \
    | sed 's/^{/{"peer":"shardlab","model":"tiny",/' | tee -a "$out"
  /usr/bin/python3 tools/torch_bench_step.py "${tiny[@]}" --batch 8 --precision $p --threads 2 --steps 10 \
    | sed 's/^{/{"model":"tiny",/' | tee -a "$out"
done
for p in fp32 bf16; do
  echo "gpt2 (124M) $p, 4 x 256" >&2
  build/shardlab bench step --preset gpt2 --batch 4 --seq-len 256 --precision $p --threads 2 --steps 3 --warmup 1 --json \
    | sed 's/^{/{"peer":"shardlab","model":"gpt2",/' | tee -a "$out"
done
for ck in none all; do
  echo "tiny activations, checkpoint $ck" >&2
  build/shardlab bench step --preset tiny --batch 8 --precision bf16 --threads 2 --steps 1 --warmup 0 --checkpoint $ck --json \
    | sed 's/^{/{"peer":"shardlab","model":"tiny-activations",/' | tee -a "$out"
done
/usr/bin/python3 tools/plot_step_bench.py "$out" bench/results/model_step.png
