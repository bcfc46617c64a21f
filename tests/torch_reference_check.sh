#!/usr/bin/env bash
# shardlab against the independent float64 PyTorch reference (tools/torch_reference.py), on the
# tiny preset cut to 2 layers of width 128: loss, logits and every gradient (fp32 within 1e-5,
# bf16 within 1e-2, relative); checkpointing bitwise identical; `shardlab train` itself replayed
# step by step — gradient accumulation, clipping, warmup + cosine, weight-decay groups (fp32 1e-4,
# bf16 3e-2) — and fp16 loss scaling skipping overflowed steps (3e-2); eval consistent with the
# same batch. With --kernels only the gradients and checkpointing sections run (the GEMM-library
# variant, torch_reference_onednn, needs no second pass over the trainer's bookkeeping).
# The gradient, checkpointing and replay steps are tests/torch_check_lib.sh's (shared with
# torch_llama_check.sh). Usage: torch_reference_check.sh SHARDLAB_BINARY [--kernels]
set -euo pipefail
shardlab=$1
kernels_only=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
ref=(/usr/bin/python3 "$here/../tools/torch_reference.py")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
source "$here/torch_check_lib.sh"

cat /usr/share/common-licenses/GPL-3 > data.txt
"$shardlab" init --preset tiny --layers 2 --hidden 128 --seq 64 --seed 5 --out w.safetensors
batch=(--data data.txt --batch 4 --seq 64)

echo "== gradients, fp32 and bf16, against float64 PyTorch"
torch_grads w.safetensors

echo "== activation checkpointing changes no bit"
checkpointing_bitwise w.safetensors

if [ "$kernels_only" = --kernels ]; then
  echo "torch reference (gradients and checkpointing): ok"
  exit 0
fi

echo "== shardlab train against PyTorch, step by step: accumulation, clipping, warmup + cosine, decay groups"
replay_args w.safetensors 4 30 5 cosine
train_replay

echo "== fp16: an absurd loss scale overflows; shardlab skips those steps (PyTorch skips them too) and the scale halves until training proceeds"
"$shardlab" train "${run[@]}" --precision fp16 --loss-scale 1e9 --steps 40 --val-every 0 --quiet --out t_fp16 >/dev/null
"${ref[@]}" train "${ref_run[@]}" --steps 40 --ours t_fp16/steps.jsonl --precision fp16
/usr/bin/python3 - <<'PY'
import json
rows = [json.loads(l) for l in open("t_fp16/steps.jsonl")]
k = sum(1 for r in rows if r.get("skipped"))
assert all(r.get("skipped") for r in rows[:k]), "the skipped steps are the first ones"
assert 10 <= k < 30, k  # 1e9 / 2^k must fall below ~65504 / max|grad|
l = [r["loss"] for r in rows]
assert l[-1] < l[0] - 0.5, (l[0], l[-1])  # then it trains
print(f"ok: {k} steps skipped, loss {l[0]:.3f} -> {l[-1]:.3f}")
PY

echo "== eval over exactly these 4 windows equals the batch loss, for any --batch"
head -c $((4 * 65)) data.txt > four_windows.txt
# (the loss `reference grads` wrote for exactly these windows, fp32)
want=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, '$here/../tools'); import torch_gpt2 as tg; print(tg.read_safetensors('g32.safetensors')[0]['loss'].item())")
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
# A shard's tokens are a tokenizer's ids, not bytes: --sample prints them as ids.
/usr/bin/python3 - <<'PY'
import struct
data = open("/usr/share/common-licenses/GPL-3", "rb").read()[:20000]
header = struct.pack("<256i", 20240520, 1, len(data), *([0] * 253))
open("gpl.bin", "wb").write(header + struct.pack(f"<{len(data)}H", *data))
PY
"$shardlab" train --init w.safetensors --data gpl.bin --micro-batch 1 --steps 1 --sample 5 --quiet \
  --out sampled >sample.txt
grep -Eq "^token ids \(the data is not text; decode them with its tokenizer\):( [0-9]+){69}$" sample.txt ||
  { echo "FAIL: --sample on an llm.c shard does not print the ids:"; cat sample.txt; exit 1; }
echo "ok: --sample on an llm.c shard prints token ids"
