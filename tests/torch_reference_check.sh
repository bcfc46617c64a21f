#!/usr/bin/env bash
# shardlab against the independent float64 PyTorch reference (tools/torch_reference.py), on the
# tiny preset cut to 2 layers of width 128: loss, logits and every gradient (fp32 within 1e-5, bf16 within
# 1e-2, relative); checkpointing bitwise identical; a 50-step AdamW loop step by step (fp32 1e-4,
# bf16 3e-2); fp16 loss scaling skipping overflowed steps; eval consistent with the same batch.
# Usage: torch_reference_check.sh SHARDLAB_BINARY
set -euo pipefail
shardlab=$1
here=$(cd "$(dirname "$0")" && pwd)
ref=(/usr/bin/python3 "$here/../tools/torch_reference.py")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

cat /usr/share/common-licenses/GPL-3 > data.txt
"$shardlab" init --preset tiny --layers 2 --hidden 128 --seq 64 --seed 5 --out w.safetensors
batch=(--data data.txt --batch 4 --seq 64)

echo "== gradients, fp32 and bf16, against float64 PyTorch"
"$shardlab" reference grads --weights w.safetensors "${batch[@]}" --out g32.safetensors
"${ref[@]}" grads --weights w.safetensors "${batch[@]}" --ours g32.safetensors --precision fp32
"$shardlab" reference grads --weights w.safetensors "${batch[@]}" --precision bf16 --out g16.safetensors
"${ref[@]}" grads --weights w.safetensors "${batch[@]}" --ours g16.safetensors --precision bf16

echo "== activation checkpointing changes no bit"
for p in fp32 bf16; do
  base=$([ $p = fp32 ] && echo g32 || echo g16)
  for ck in all every:2; do
    "$shardlab" reference grads --weights w.safetensors "${batch[@]}" --precision $p --checkpoint $ck --out ck.safetensors >/dev/null
    cmp "$base.safetensors" ck.safetensors
    echo "ok: $p --checkpoint $ck bitwise identical"
  done
done

echo "== 50 AdamW steps on a fixed batch, step by step"
adam=(--steps 50 --lr 3e-4 --beta1 0.9 --beta2 0.95 --eps 1e-8 --weight-decay 0.1)
for p in fp32 bf16; do
  "$shardlab" reference overfit --weights w.safetensors "${batch[@]}" "${adam[@]}" --precision $p --out o_$p.json
  "${ref[@]}" train --weights w.safetensors "${batch[@]}" "${adam[@]}" --ours o_$p.json --precision $p
done

echo "== fp16: an absurd loss scale overflows, steps are skipped and the scale halves until training proceeds"
"$shardlab" reference overfit --weights w.safetensors "${batch[@]}" "${adam[@]}" --precision fp16 --loss-scale 1e9 --out o_fp16.json
/usr/bin/python3 - <<'PY'
import json
d = json.load(open("o_fp16.json"))
l, k = d["losses"], d["skipped_steps"]
assert 10 <= k < 30, k                      # 1e9 / 2^k must fall below ~65504 / max|grad|
assert all(x == l[0] for x in l[:k]), l[:k]  # a skipped step changes no parameter
assert l[-1] < l[0] - 1.0, (l[0], l[-1])    # then it trains
print(f"ok: {k} steps skipped, final scale {d['final_loss_scale']}, loss {l[0]:.3f} -> {l[-1]:.3f}")
PY

echo "== eval over exactly these 4 windows equals the batch loss, for any --batch"
head -c $((4 * 65)) data.txt > four_windows.txt
want=$(/usr/bin/python3 -c "import json,sys; print(json.load(open('o_fp32.json'))['losses'][0])")
for b in 4 3 1; do
  got=$("$shardlab" eval --weights w.safetensors --data four_windows.txt --seq 64 --batch $b --json)
  /usr/bin/python3 -c "import json,sys; g=json.loads('$got'); assert g['windows']==4 and g['tokens']==256, g; assert abs(g['loss']-$want) < 1e-5*abs($want), (g, $want); print('ok: eval --batch $b', g)"
done

echo "== the same tokens as an llm.c shard give the same eval loss"
/usr/bin/python3 - <<'PY'
import struct
data = open("four_windows.txt", "rb").read()
header = struct.pack("<256i", 20240520, 1, len(data), *([0] * 253))
open("four_windows.bin", "wb").write(header + struct.pack(f"<{len(data)}H", *data))
PY
got=$("$shardlab" eval --weights w.safetensors --data four_windows.bin --seq 64 --batch 4 --json)
/usr/bin/python3 -c "import json; g=json.loads('$got'); assert abs(g['loss']-$want) < 1e-5*abs($want), (g, $want); print('ok: llm.c shard', g)"
