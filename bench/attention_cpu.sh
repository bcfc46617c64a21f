#!/usr/bin/env bash
# Flash attention on the CPU (issue 24), docs/BENCHMARKS.md: flash against materialize measured
# side by side in one run, on 1 rank x 2 threads, fp32:
#   1. attention alone, forward + backward (`shardlab bench attention`, the two kernels
#      interleaved), beside PyTorch on the same shapes, two ways: causal attention written out
#      (matmul, masked softmax, matmul) and PyTorch's fused call — scaled_dot_product_attention
#      where the installed torch has it (2.x; on the CPU from 2.2 a flash kernel), else 1.13's
#      `_scaled_dot_product_attention` (its predecessor, the one Debian 12's torch has; on the CPU
#      it materialises the probabilities too). The row names which one ran;
#   2. a whole training step (`shardlab bench step --attention ...`): tokens/s and the tracked
#      activation and device peaks — tiny at T = 256 and T = 1024, GPT-2 124M at T = 1024.
# Writes bench/results/attention_cpu.jsonl (another name: NAME=attention_cpu_avx512, one per CPU
# kind). About four minutes on a 2-vCPU machine.
# Usage: [NAME=...] bench/attention_cpu.sh [SHARDLAB]   (default build/shardlab)
set -euo pipefail
cd "$(dirname "$0")/.."
shardlab=${1:-build/shardlab}
out=bench/results/${NAME:-attention_cpu}.jsonl
mkdir -p bench/results
: > "$out"
"$shardlab" device | sed -n '1,4p' >&2
# PyTorch's products run on OpenBLAS (Debian's torch): on the same 2 threads, with the kernel
# OpenBLAS picks for this CPU (an inherited OPENBLAS_CORETYPE may force an older one), as
# tools/torch_bench_step.py runs the step's peer.
torch_attention() { # B T H hd: PyTorch's causal attention, forward + backward, ms
  env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 /usr/bin/python3 - "$@" <<'PY'
import json, sys, time, torch
B, T, H, hd = map(int, sys.argv[1:])
torch.set_num_threads(2)
torch.manual_seed(0)
q, k, v = (torch.rand(B, H, T, hd) * 2 - 1 for _ in range(3))
for x in (q, k, v): x.requires_grad_(True)
dout = torch.rand(B, H, T, hd) * 2 - 1
mask = torch.ones(T, T, dtype=torch.bool).triu(1)
F = torch.nn.functional
def written_out():
    s = (q @ k.transpose(-1, -2)) * hd ** -0.5
    p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
    return p @ v
if hasattr(F, "scaled_dot_product_attention"):
    fused_name = "scaled_dot_product_attention"
    fused = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
else:  # torch 1.13: (query, key, value, attn_mask, dropout_p, need_attn_weights, is_causal)
    fused_name = "_scaled_dot_product_attention"
    fused = lambda: F._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)[0]
def median_ms(forward):  # as `bench attention --iters 3`: best of 2 rounds of (warm-up, median of 3)
    rounds = []
    for _ in range(2):
        ts = []
        for i in range(4):
            t0 = time.perf_counter(); forward().backward(dout); ts.append(time.perf_counter() - t0)
        rounds.append(sorted(ts[1:])[1])
    return min(rounds) * 1e3
gap = (fused() - written_out()).abs().max().item()  # the same function, or the row means nothing
assert gap < 1e-5, f"{fused_name} differs from causal attention by {gap}"
print(json.dumps({"torch": torch.__version__, "torch_ms": median_ms(written_out),
                  "torch_fused": fused_name, "torch_fused_ms": median_ms(fused)}))
PY
}
attention_row() { # B T H hd
  echo "attention alone: B $1 T $2 H $3 hd $4" >&2
  local a t
  a=$("$shardlab" bench attention --batch "$1" --seq-len "$2" --heads "$3" --head-dim "$4" --threads 2 --iters 3)
  t=$(torch_attention "$@")
  /usr/bin/python3 -c 'import json,sys; a=json.loads(sys.argv[1]); a.update(json.loads(sys.argv[2])); a["kind"]="attention"; print(json.dumps(a))' "$a" "$t" | tee -a "$out"
}
attention_row 8 256 4 64   # tiny's shapes: micro-batch 8 x 256, 4 heads of 64
attention_row 2 1024 4 64  # tiny at T = 1024
attention_row 1 1024 12 64 # GPT-2 124M at T = 1024, micro-batch 1
step_row() { # NAME ARGS...: one step benchmark per kind, materialize first
  local name=$1
  shift
  for a in materialize flash; do
    echo "step $name --attention $a" >&2
    "$shardlab" bench step "$@" --attention $a --threads 2 --precision fp32 --json |
      sed "s/^{/{\"kind\":\"step\",\"model\":\"$name\",/" | tee -a "$out"
  done
}
step_row tiny-256 --preset tiny --batch 8 --steps 5 --warmup 1
step_row tiny-1024 --preset tiny --seq 1024 --batch 2 --steps 3 --warmup 1
step_row gpt2-1024 --preset gpt2 --batch 1 --seq-len 1024 --steps 2 --warmup 1
