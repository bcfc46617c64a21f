#!/usr/bin/env bash
# shardlab's Llama against the independent float64 PyTorch Llama (tools/torch_llama.py, through
# tools/torch_reference.py, which picks the family from the weights' config): a random-init tiny
# Llama with grouped-query attention (4 heads, 2 KV heads) and an untied head — loss, logits and
# every gradient (fp32 within 1e-5, bf16 within 1e-2, relative); checkpointing bitwise identical;
# a tied head's gradients; `shardlab train` replayed step by step (fp32 1e-6, bf16 2e-2 per step).
# The gradient, checkpointing and replay steps are tests/torch_check_lib.sh's (shared with
# torch_reference_check.sh). Usage: torch_llama_check.sh SHARDLAB_BINARY
set -euo pipefail
shardlab=$1
here=$(cd "$(dirname "$0")" && pwd)
ref=(/usr/bin/python3 "$here/../tools/torch_reference.py")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
source "$here/torch_check_lib.sh"

cat /usr/share/common-licenses/GPL-3 > data.txt
model=(--arch llama --preset tiny-llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 96 --seq 64)
"$shardlab" init "${model[@]}" --seed 5 --out w.safetensors
"$shardlab" init "${model[@]}" --tied-head --seed 6 --out tied.safetensors
batch=(--data data.txt --batch 3 --seq 64)

echo "== gradients, fp32 and bf16, against float64 PyTorch (GQA 4:2, untied head)"
torch_grads w.safetensors

echo "== a tied head"
"$shardlab" reference grads --weights tied.safetensors "${batch[@]}" --out gt.safetensors
"${ref[@]}" grads --weights tied.safetensors "${batch[@]}" --ours gt.safetensors --precision fp32

echo "== activation checkpointing changes no bit"
checkpointing_bitwise w.safetensors

echo "== shardlab train against PyTorch, step by step"
replay_args w.safetensors 3 12 3 linear
train_replay
echo "torch llama reference: ok"
