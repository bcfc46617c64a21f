#!/usr/bin/env bash
# shardlab's Llama against the independent float64 PyTorch Llama (tools/torch_llama.py, through
# tools/torch_reference.py, which picks the family from the weights' config): a random-init tiny
# Llama with grouped-query attention (4 heads, 2 KV heads) and an untied head — loss, logits and
# every gradient (fp32 within 1e-5, bf16 within 1e-2, relative); checkpointing bitwise identical;
# a tied head's gradients; `shardlab train` replayed step by step (fp32 1e-6, bf16 2e-2 per step).
# Usage: torch_llama_check.sh SHARDLAB_BINARY
set -euo pipefail
shardlab=$1
here=$(cd "$(dirname "$0")" && pwd)
ref=(/usr/bin/python3 "$here/../tools/torch_reference.py")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

cat /usr/share/common-licenses/GPL-3 > data.txt
model=(--arch llama --preset tiny-llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 96 --seq 64)
"$shardlab" init "${model[@]}" --seed 5 --out w.safetensors
"$shardlab" init "${model[@]}" --tied-head --seed 6 --out tied.safetensors
batch=(--data data.txt --batch 3 --seq 64)

echo "== gradients, fp32 and bf16, against float64 PyTorch (GQA 4:2, untied head)"
"$shardlab" reference grads --weights w.safetensors "${batch[@]}" --out g32.safetensors
"${ref[@]}" grads --weights w.safetensors "${batch[@]}" --ours g32.safetensors --precision fp32
"$shardlab" reference grads --weights w.safetensors "${batch[@]}" --precision bf16 --out g16.safetensors
"${ref[@]}" grads --weights w.safetensors "${batch[@]}" --ours g16.safetensors --precision bf16

echo "== a tied head"
"$shardlab" reference grads --weights tied.safetensors "${batch[@]}" --out gt.safetensors
"${ref[@]}" grads --weights tied.safetensors "${batch[@]}" --ours gt.safetensors --precision fp32

echo "== activation checkpointing changes no bit"
for p in fp32 bf16; do
  base=$([ $p = fp32 ] && echo g32 || echo g16)
  for ck in all every:2; do
    "$shardlab" reference grads --weights w.safetensors "${batch[@]}" --precision $p --checkpoint $ck --out ck.safetensors >/dev/null
    cmp "$base.safetensors" ck.safetensors
    echo "ok: $p --checkpoint $ck bitwise identical"
  done
done

echo "== shardlab train against PyTorch, step by step"
run=(--init w.safetensors --data data.txt --micro-batch 3 --grad-accum 2 --steps 12 --lr 1e-3
     --warmup 3 --schedule cosine --min-lr-ratio 0.1 --grad-clip 1.0 --beta1 0.9 --beta2 0.95
     --eps 1e-8 --weight-decay 0.1)
ref_run=(--weights w.safetensors --data data.txt --micro-batch 3 --grad-accum 2 --steps 12 --lr 1e-3
     --warmup 3 --schedule cosine --min-lr-ratio 0.1 --grad-clip 1.0 --beta1 0.9 --beta2 0.95
     --eps 1e-8 --weight-decay 0.1)
for p in fp32 bf16; do
  "$shardlab" train "${run[@]}" --precision $p --val-every 0 --quiet --out "t_$p" >/dev/null
  "${ref[@]}" train "${ref_run[@]}" --ours "t_$p/steps.jsonl" --precision $p
done
echo "torch llama reference: ok"
