#!/usr/bin/env bash
# The paper model (tools/paper_model.py, docs/GPU.md) follows the code: one traced training step
# of a small model runs exactly the ops, with exactly the shapes and counts, that the paper lists
# for it — for each attention path given. A change to the model's op sequence that the paper does
# not follow fails here. Usage: paper_model_check.sh SHARDLAB TOOLS_DIR ATTENTION...
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
