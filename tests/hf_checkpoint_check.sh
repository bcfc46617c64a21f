#!/usr/bin/env bash
# Hugging Face checkpoint folders (issue 25), against tools/hf_folder.py — a writer and reader
# written from transformers' save_pretrained layout, not from shardlab's C++:
# - a folder Python wrote (config.json, greedy shards, index, no shardlab metadata) gives exactly
#   the gradients its single-file source gives, fp32 and bf16, from the folder and from the index;
# - the folders shardlab writes (train --save-weights DIR/, checkpoint export --out DIR/, init
#   --out DIR/) hold the single file's tensors bit for bit, in the shards their index names, with
#   a config.json that describes the model, and no file of an earlier save beside them;
# - train --init from a folder starts where the file starts (same losses, bit for bit);
# - an index that disagrees with its shards, and a missing shard, are refused by name; so is a
#   folder whose save over an earlier one was cut short between its shards' renames;
# - Llama 3.1/3.2's rope_scaling read from config.json: gradients against the float64 reference;
# - Llama 3's vocabulary (128,256 > 65,536): its gradients against the float64 reference
#   (tools/torch_reference.py), a run from its folder, and --sample refused (ids are uint16).
# Usage: hf_checkpoint_check.sh SHARDLAB_BINARY
set -euo pipefail
shardlab=$1
here=$(cd "$(dirname "$0")" && pwd)
hf=(/usr/bin/python3 "$here/../tools/hf_folder.py")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

cat /usr/share/common-licenses/GPL-3 > data.txt
model=(--arch llama --preset tiny-llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 96 --seq 64)
batch=(--data data.txt --batch 3 --seq 64)
"$shardlab" init "${model[@]}" --seed 5 --out w.safetensors
"$shardlab" init "${model[@]}" --seed 5 --dtype bf16 --out wb.safetensors

echo "== a folder as save_pretrained writes it, read by shardlab"
"${hf[@]}" export w.safetensors py32 --shard-bytes 40000
"${hf[@]}" export w.safetensors py16 --shard-bytes 20000 --dtype bf16
shards=$(ls py32/model-*-of-*.safetensors | wc -l)
[ "$shards" -ge 3 ] || { echo "FAIL: expected >= 3 shards, got $shards"; exit 1; }
"$shardlab" reference grads --weights w.safetensors "${batch[@]}" --out g_file.safetensors >/dev/null
"$shardlab" reference grads --weights wb.safetensors "${batch[@]}" --out g_bf16.safetensors >/dev/null
for from in py32 py32/model.safetensors.index.json; do
  "$shardlab" reference grads --weights "$from" "${batch[@]}" --out g.safetensors >/dev/null
  cmp g_file.safetensors g.safetensors
  echo "ok: --weights $from ($shards shards): the file's gradients, bit for bit"
done
"$shardlab" reference grads --weights py16 "${batch[@]}" --out g.safetensors >/dev/null
cmp g_bf16.safetensors g.safetensors
echo "ok: bf16 shards: the gradients of shardlab's own bf16 rounding, bit for bit"

echo "== Llama 3.1/3.2's rope_scaling from config.json, against the float64 reference"
# head_dim 16, theta 1e4: wavelengths 6.3 .. 19869; over a context of 256 with high 8 the first
# two frequencies are kept, the next two blended, the other four divided by the factor 8.
"${hf[@]}" export w.safetensors scaled --shard-bytes 100000 --rope-scaling 8,1,8,256 --single scaled.safetensors
"$shardlab" reference grads --weights scaled "${batch[@]}" --out gs.safetensors >/dev/null
"$shardlab" reference grads --weights scaled.safetensors "${batch[@]}" --out gs1.safetensors >/dev/null
cmp gs.safetensors gs1.safetensors
if cmp -s gs.safetensors g_file.safetensors; then echo "FAIL: rope_scaling changed nothing"; exit 1; fi
/usr/bin/python3 "$here/../tools/torch_reference.py" grads --weights scaled.safetensors "${batch[@]}" --ours gs.safetensors --precision fp32 | tail -1
echo "ok: config.json's rope_scaling = the metadata's, and both match transformers' llama3 rule"

echo "== folders shardlab writes"
run=(--init w.safetensors --data data.txt --micro-batch 2 --steps 3 --val-every 0 --quiet)
"$shardlab" train "${run[@]}" --out r1 --save-every 3 --save-weights trained/ --save-shard-size 40KB >/dev/null
"$shardlab" checkpoint export r1 --out trained.safetensors >/dev/null
"${hf[@]}" compare trained trained.safetensors
"$shardlab" checkpoint export r1 --out exported/ --shard-size 30KB >/dev/null
"${hf[@]}" compare exported trained.safetensors
"$shardlab" checkpoint export r1 --out exported/ >/dev/null # one file now: the shards must go
[ -f exported/model.safetensors ] && [ ! -f exported/model.safetensors.index.json ]
"${hf[@]}" compare exported trained.safetensors
"$shardlab" init "${model[@]}" --seed 5 --out inited/ --shard-size 50KB >/dev/null
"${hf[@]}" compare inited w.safetensors


echo "== init draws and writes a unit at a time"
# 24 blocks of 3 MB each, 76 MB in all: the peak resident memory stays near one unit's, not the
# model's (init once held every unit in fp32 before writing: 28 GB for a 7B model).
peak_kb=$(/usr/bin/python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$shardlab" init --layers 24 --hidden 256 --heads 4 \
  --vocab 256 --seq 64 --out deep.safetensors)
size_kb=$(($(stat -c %s deep.safetensors) / 1024))
((peak_kb < size_kb / 2)) || { echo "FAIL: init of a $size_kb KB model peaked at $peak_kb KB resident"; exit 1; }
echo "ok: init of a $size_kb KB model peaked at $peak_kb KB resident"
rm deep.safetensors
echo "== a save over an earlier one, cut short between its shards' renames"
# Same shard names as the earlier save: its index goes first, so the cut folder loads as nothing
# (not as new shard 1 beside old shards 2..n that the old index would call one model).
"$shardlab" init "${model[@]}" --seed 6 --out cut/ --shard-size 50KB >/dev/null
SHARDLAB_TEST_STOP_AT=weights_rename:0 "$shardlab" init "${model[@]}" --seed 7 --out cut/ \
  --shard-size 50KB >/dev/null 2>&1 &
pid=$!
for _ in $(seq 300); do [ "$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)" = T ] && break; sleep 0.1; done
kill -KILL $pid
wait $pid 2>/dev/null || true # its "Killed" is this test's doing
[ "$(ls cut/model-*-of-*.safetensors | wc -l)" -ge 2 ] || { echo "FAIL: expected >= 2 shards in cut/"; exit 1; }
if "$shardlab" reference grads --weights cut "${batch[@]}" --out g_cut.safetensors >cut.log 2>&1; then
  echo "FAIL: a folder cut short between its renames loaded"; exit 1
fi
grep -q "holds shards (model-0000.-of-0000.\.safetensors and others) but no model.safetensors.index.json: a save into it was cut short" cut.log ||
  { echo "FAIL: no word of the cut save:"; cat cut.log; exit 1; }
echo "ok: a save cut short between its renames is refused, not loaded as a mixture of two saves"

echo "== train --init from a folder"
"$shardlab" train "${run[@]}" --out r2 >/dev/null
"$shardlab" train "${run[@]/w.safetensors/py32}" --out r3 >/dev/null
/usr/bin/python3 - r2 r3 <<'PY'
import json, sys
a, b = (json.load(open(f"{d}/report.json")) for d in sys.argv[1:])
la, lb = ([json.loads(l)["loss"] for l in open(f"{d}/steps.jsonl")] for d in sys.argv[1:])
assert la == lb and len(la) == 3, (la, lb)
assert a["final_params_sha256"] == b["final_params_sha256"], "final weights differ"
print(f"ok: --init py32/ trains exactly as --init w.safetensors (losses {la}, same final hash)")
PY

echo "== refusals"
cp -r py32 bad
/usr/bin/python3 - bad/model.safetensors.index.json <<'PY'
import json, sys
p = sys.argv[1]; j = json.load(open(p))
j["weight_map"]["model.norm.weight"] = "model-00001-of-%05d.safetensors" % len(set(j["weight_map"].values()))
json.dump(j, open(p, "w"))
PY
if "$shardlab" reference grads --weights bad "${batch[@]}" --out g.safetensors 2>err.txt; then
  echo "FAIL: an index placing a tensor in the wrong shard was accepted"; exit 1; fi
grep -qE "model.norm.weight.*(which the index places in|which does not hold it)" err.txt || { cat err.txt; exit 1; }
rm -r bad && cp -r py32 bad && rm bad/model-00002-of-*.safetensors
if "$shardlab" reference grads --weights bad "${batch[@]}" --out g.safetensors 2>err.txt; then
  echo "FAIL: a missing shard was accepted"; exit 1; fi
grep -q "which is missing" err.txt || { cat err.txt; exit 1; }
echo "ok: a wrong index and a missing shard refused by name"

echo "== Llama 3's vocabulary (128,256 tokens)"
big=(--arch llama --layers 1 --hidden 32 --heads 2 --kv-heads 1 --ffn 48 --vocab 128256 --seq 16)
"$shardlab" init "${big[@]}" --seed 3 --out big.safetensors >/dev/null
"$shardlab" reference grads --weights big.safetensors --data data.txt --batch 2 --seq 16 --out gbig.safetensors >/dev/null
/usr/bin/python3 "$here/../tools/torch_reference.py" grads --weights big.safetensors --data data.txt --batch 2 --seq 16 --ours gbig.safetensors --precision fp32
"${hf[@]}" export big.safetensors bighf --shard-bytes 5000000
"$shardlab" train --init bighf --data data.txt --micro-batch 2 --steps 2 --val-every 0 --quiet --out r4 >/dev/null
if "$shardlab" train --init bighf --data data.txt --micro-batch 2 --steps 1 --sample 4 --quiet --out r5 2>err.txt; then
  echo "FAIL: --sample with a 128,256-token vocabulary was accepted"; exit 1; fi
grep -q "cannot be stored (tokens are uint16)" err.txt || { cat err.txt; exit 1; }
echo "ok: trains from its $(ls bighf/model-*.safetensors | wc -l)-shard folder; --sample refused by name"
echo "hf checkpoint folders: ok"
