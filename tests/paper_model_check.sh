#!/usr/bin/env bash
# The paper model (tools/paper_model.py, docs/GPU.md) follows the code: one traced training step
# of a small model runs exactly the ops, with exactly the shapes and counts, that the paper lists
# for it — for each attention path given. A change to the model's op sequence that the paper does
# not follow fails here. And fp32's products are priced at the fp32 rate (CUDA cores: the GEMMs
# compute in 32F without TF32), not the bf16 tensor peak, and its MFU against that rate.
# Usage: paper_model_check.sh SHARDLAB TOOLS_DIR ATTENTION...
set -euo pipefail
shardlab=$1 tools=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shape=(--layers 2 --hidden 64 --heads 4 --seq 24 --vocab 200)
for attention in "$@"; do
  "$shardlab" train "${shape[@]}" --attention "$attention" --micro-batch 3 --steps 2 --quiet \
    --trace "$work/$attention.json" --trace-steps 1 --out "$work/run-$attention" >/dev/null
  python3 "$tools/paper_model.py" --layers 2 --hidden 64 --heads 4 --vocab 200 --context 24 \
    --seq 24 --batch 3 --attention "$attention" --check-trace "$work/$attention.json"
done
python3 - "$tools" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import roofline
args = {"a": "[4096, 768] fp32", "b": "[768, 3072] fp32", "c": "[4096, 3072] fp32"}
c = roofline.cost("gemm", args)
floor = c[0] / roofline.GPUS["h100"]["fp32"]
assert roofline.seconds(c, "h100", roofline_only=True) >= floor, (c, floor)
bf16 = roofline.cost("gemm", {k: v.replace("fp32", "bf16") for k, v in args.items()})
assert roofline.seconds(bf16, "h100", roofline_only=True) < floor / 10
print(f"ok: an fp32 GEMM's roofline is its FLOPs at the fp32 rate ({floor * 1e3:.3f} ms)")
PY
