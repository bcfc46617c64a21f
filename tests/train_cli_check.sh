#!/usr/bin/env bash
# `shardlab train` bad input, end to end: each a clear message and a non-zero exit, no hang.
set -euo pipefail
shardlab=$1 expect=$2
shift 2
mpirun=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
small=(--layers 1 --hidden 32 --heads 2 --seq 16 --steps 2 --quiet)
"$expect" 2 "--zero 5 is not a ZeRO stage" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --zero 5
"$expect" 2 "bad --attention 'fast'; use flash or materialize" "$shardlab" train "${small[@]}" --attention fast
# --attention from a TOML config reaches the report's config (flash is the default).
printf 'attention = "materialize"\n' >"$work/att.toml"
"$shardlab" train "${small[@]}" --config "$work/att.toml" --out "$work/att" >/dev/null
"$shardlab" train "${small[@]}" --out "$work/att-default" >/dev/null
/usr/bin/python3 -c 'import json, sys; a, b = (json.load(open(f"{d}/report.json"))["config"]["attention"] for d in sys.argv[1:]); assert (a, b) == ("materialize", "flash"), (a, b)' "$work/att" "$work/att-default"
"$expect" 2 "--global-batch 6 is not divisible by N x micro-batch = 2 x 4 = 8" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --micro-batch 4 --global-batch 6
"$expect" 2 "error on rank 0,1: token file '$work/no-such-corpus.txt': does not exist" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --data "$work/no-such-corpus.txt"
"$expect" 2 "bad --checkpoint 'sometimes'" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --checkpoint sometimes
"$expect" 2 "--prefetch applies to ZeRO-3 only" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --zero 2 --prefetch 1
head -c 100 /usr/share/common-licenses/GPL-3 > "$work/tiny.txt"
"$expect" 2 "the data's validation part (its last 10%: 10 of 100 tokens) is shorter than 2 sequence(s) of 17 tokens (one pass of 2 ranks x micro-batch 1); use at least 340 tokens" \
  "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --data "$work/tiny.txt" --micro-batch 1
head -c 400 /usr/share/common-licenses/GPL-3 > "$work/small.txt"
"$expect" 2 "the data's training part (360 of its 400 tokens; the last 10% are kept for validation) is too small for a global batch of 2 ranks x micro-batch 4 x grad-accum 3 sequences of 17 tokens, each once" \
  "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --data "$work/small.txt" --micro-batch 4 --grad-accum 3
# A file only one rank can see (node-local paths): every rank stops with rank 1's message, no hang.
mkdir -p "$work/a" "$work/b"
head -c 20000 /usr/share/common-licenses/GPL-3 > "$work/a/d.txt"
"$expect" 2 "error on rank 1: token file 'd.txt': does not exist" timeout 60 "${mpirun[@]}" \
  -np 1 -wdir "$work/a" "$shardlab" train "${small[@]}" --data d.txt --out "$work/a/o" : \
  -np 1 -wdir "$work/b" "$shardlab" train "${small[@]}" --data d.txt --out "$work/b/o"
# Offload with stage 0 is supported (every rank updates the whole model on its host).
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --zero 0 --offload --out "$work/z0off" >/dev/null
# A checkpoint resumes at any N, but with the same global batch and config, and must be intact.
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --save-every 2 --stop-after 2 --out "$work/run" >/dev/null
"$expect" 2 "was trained with a global batch of 16 sequences, this run has 24; 3 ranks cannot make 16 sequences (3 does not divide it): resume on a rank count that does (1, 2, 4, 8, 16)" "${mpirun[@]}" -np 3 "$shardlab" train "${small[@]}" --steps 4 --resume "$work/run" --out "$work/run3"
"$expect" 2 "was written with lr = " "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --lr 0.5 --resume "$work/run" --out "$work/run"
# --stop-after alone still leaves a checkpoint, and resuming continues from it; a line of
# steps.jsonl a killed run left half written is dropped with a warning.
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --stop-after 2 --out "$work/stopped" >/dev/null
test -d "$work/stopped/checkpoint"
printf '{"step": 3, "loss": 4.' >> "$work/stopped/steps.jsonl"
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --resume "$work/stopped" --out "$work/stopped" > "$work/stopped.log" 2>&1
grep -q "line 3 is not a whole JSON row" "$work/stopped.log"
python3 -c "import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; assert [r['step'] for r in rows]==[1,2,3,4], rows" "$work/stopped/steps.jsonl"
# A save that died between its two renames leaves only checkpoint.prev: resume finds it.
cp -r "$work/run" "$work/crashed" && mv "$work/crashed/checkpoint" "$work/crashed/checkpoint.prev"
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --save-every 2 --resume "$work/crashed" --out "$work/crashed" > "$work/crashed.log"
grep -q "resumed from" "$work/crashed.log" # (not through a pipe: grep -q would close it early and mpirun take SIGPIPE)
# Every rank resumes at rank 0's step: a rank whose file says otherwise (checksum intact) stops
# the job with both steps named.
cp -r "$work/run" "$work/skewed"
/usr/bin/python3 - "$work/skewed/checkpoint/rank-1.bin" <<'PY'
import struct, sys
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
struct.pack_into("<i", b, 24, 3)  # iteration (after magic, rank, ranks, units, step)
h = 1469598103934665603
for c in b[:-8]:
    h = ((h ^ c) * 1099511628211) % (1 << 64)
struct.pack_into("<Q", b, len(b) - 8, h)
open(path, "wb").write(bytes(b))
PY
"$expect" 2 "rank-1.bin is at step 3, another file at step 2" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --resume "$work/skewed" --out "$work/skewed"
printf 'X' | dd of="$work/run/checkpoint/rank-1.bin" bs=1 seek=100 conv=notrunc status=none
"$expect" 2 "is corrupt (checksum mismatch)" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --resume "$work/run" --out "$work/run"
# The corrupt latest checkpoint's message names the one kept before it; resuming from that one
# makes it the latest (the corrupt one set aside as checkpoint.rejected), so the run's own
# rotation never deletes the state it stands on (it once did, at its first finite step).
"$shardlab" train "${small[@]}" --steps 4 --stop-after 2 --out "$work/pv" >/dev/null
cp -r "$work/pv/checkpoint" "$work/pv2"
"$shardlab" train "${small[@]}" --steps 4 --stop-after 3 --resume "$work/pv" >/dev/null
mv "$work/pv2" "$work/pv/checkpoint.prev"
printf 'X' | dd of="$work/pv/checkpoint/rank-0.bin" bs=1 seek=100 conv=notrunc status=none
"$expect" 2 "is corrupt (checksum mismatch); resume from $work/pv/checkpoint.prev (step 2) instead" "$shardlab" train "${small[@]}" --steps 4 --resume "$work/pv"
"$expect" 0 "checkpoint resumed from is $work/pv/checkpoint now" "$shardlab" train "${small[@]}" --steps 4 --stop-after 3 --resume "$work/pv/checkpoint.prev" --out "$work/pv"
grep -q '"iteration": 3' "$work/pv/checkpoint/meta.json" && test ! -e "$work/pv/checkpoint.prev"
"$expect" 1 "is corrupt (checksum mismatch)" "$shardlab" checkpoint inspect "$work/pv/checkpoint.rejected"
# One run at a time in a directory: a second run on a live --out is refused, naming the first
# (two such runs interleaved their step logs and removed each other's checkpoints).
"$shardlab" train "${small[@]}" --steps 1000000 --out "$work/live" >/dev/null 2>&1 &
live=$!
for _ in $(seq 300); do [ -s "$work/live/steps.jsonl" ] && break; sleep 0.1; done
"$expect" 2 "--out $work/live is in use by another shardlab run (pid $live on" "$shardlab" train "${small[@]}" --steps 1000000 --overwrite --out "$work/live"
kill -TERM "$live" && wait "$live" || true
test -s "$work/live/steps.jsonl"
# checkpoint export never writes into a checkpoint of the run it reads (it replaced rank-0.bin).
"$expect" 2 "--out $work/pv/checkpoint/rank-0.bin is inside the checkpoint directory $work/pv/checkpoint" "$shardlab" checkpoint export "$work/pv" --out "$work/pv/checkpoint/rank-0.bin"
"$expect" 2 "is inside the checkpoint directory $work/pv/checkpoint.rejected" "$shardlab" checkpoint export "$work/pv" --out "$work/pv/checkpoint.rejected/w.safetensors"
"$shardlab" checkpoint inspect "$work/pv" >/dev/null
"$expect" 2 "--resume $work/nothing: no such directory" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --resume "$work/nothing" --out "$work/x"
test ! -e "$work/x" # refused before --out is made
"$expect" 2 "--resume $work/att: that run saved no checkpoint" "$shardlab" train "${small[@]}" --resume "$work/att" --out "$work/x"
# --resume RUN/checkpoint continues RUN (it once started a second run inside the checkpoint
# directory, whose next resume went back to the old step); --out a checkpoint directory is refused.
"$shardlab" train "${small[@]}" --steps 4 --stop-after 2 --out "$work/bycp" >/dev/null
"$shardlab" train "${small[@]}" --steps 4 --stop-after 3 --resume "$work/bycp/checkpoint" >/dev/null
test ! -e "$work/bycp/checkpoint/report.json" && test ! -e "$work/bycp/checkpoint/checkpoint"
grep -q '"iteration": 3' "$work/bycp/checkpoint/meta.json"
"$expect" 2 "--out $work/run/checkpoint is a checkpoint directory (it holds meta.json); give --out the run's directory, $work/run" "$shardlab" train "${small[@]}" --out "$work/run/checkpoint"
# --overwrite replaces the whole run: the old checkpoint goes (a divergence once restored it).
cp -r "$work/bycp" "$work/ow"
"$shardlab" train "${small[@]}" --overwrite --out "$work/ow" >/dev/null
test ! -e "$work/ow/checkpoint" && test ! -e "$work/ow/checkpoint.prev"
grep -q '"steps": 2' "$work/ow/report.json"
# --global-batch: a negative value or a --grad-accum that disagrees is refused; --print-config
# shows the grad-accum the run would use.
"$expect" 2 "--global-batch: -16 is below 0" "$shardlab" train "${small[@]}" --global-batch -16
"$expect" 2 "--grad-accum 4 and --global-batch 16 disagree: 1 ranks x micro-batch 8 x grad-accum 4 = 32 sequences" "$shardlab" train "${small[@]}" --micro-batch 8 --grad-accum 4 --global-batch 16
"$shardlab" train "${small[@]}" --micro-batch 8 --global-batch 32 --print-config |
  /usr/bin/python3 -c 'import json, sys; c = json.load(sys.stdin); assert c["grad_accum"] == 4, c["grad_accum"]'
"$expect" 2 "--stop-after: -1 is below 0" "$shardlab" train "${small[@]}" --stop-after -1
"$expect" 2 "-1 is negative; use a seed from 0 to 2^64 - 1" "$shardlab" train "${small[@]}" --seed -1
# Config files: applied (zero, micro-batch), overridden by flags (--hidden, --steps), and checked.
printf 'hidden = 48\nzero = 2\nmicro-batch = 3\nsteps = 9\n' > "$work/run.toml"
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --config "$work/run.toml" --steps 2 --out "$work/cfg" >/dev/null
/usr/bin/python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['config']; assert c['model']['hidden']==32 and c['zero']==2 and c['micro_batch']==3 and c['steps']==2, c" "$work/cfg/report.json"
printf 'config = "%s"\n' "$work/run.toml" > "$work/nested.toml"
"$expect" 2 "a config file cannot name another (key 'config')" "$shardlab" train "${small[@]}" --config "$work/nested.toml"
printf 'bogus = 1\n' > "$work/bad.toml"
"$expect" 2 "unknown key 'bogus'" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --config "$work/bad.toml"
printf 'zero = "three"\n' > "$work/bad.toml"
"$expect" 2 "bad value for 'zero'" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --config "$work/bad.toml"
printf 'zero = \n' > "$work/bad.toml"
"$expect" 2 "is not valid TOML" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --config "$work/bad.toml"
# A non-finite gradient never reaches the weights: with token 'e''s embedding at 1e38 (finite,
# but its LayerNorm overflows) every step is skipped, said so, counted, and the weights end as
# they began.
"$shardlab" init --layers 1 --hidden 32 --heads 2 --seq 16 --out "$work/w.safetensors" >/dev/null
/usr/bin/python3 - "$work/w.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
n = struct.unpack_from("<Q", b, 0)[0]
info = json.loads(b[8:8 + n])["transformer.wte.weight"]
row = ord("e") * 32 * 4
start = 8 + n + info["data_offsets"][0] + row
for i in range(32):
    struct.pack_into("<f", b, start + 4 * i, 1e38)
open(path, "wb").write(bytes(b))
PY
"${mpirun[@]}" -np 2 "$shardlab" train --init "$work/w.safetensors" --steps 2 --quiet --precision bf16 --zero 3 --save-weights "$work/after.safetensors" --out "$work/nan" > "$work/nan.log" 2>&1
grep -q "step 1: the gradient norm is NaN: the step was skipped and no weight changed" "$work/nan.log"
/usr/bin/python3 - "$work/w.safetensors" "$work/after.safetensors" "$work/nan/report.json" <<'PY'
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack_from("<Q", b, 0)[0]
    h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
    return {k: b[8 + n + v["data_offsets"][0]: 8 + n + v["data_offsets"][1]] for k, v in h.items()}
before, after = tensors(sys.argv[1]), tensors(sys.argv[2])
assert before.keys() == after.keys() and all(before[k] == after[k] for k in before), "weights changed"
r = json.load(open(sys.argv[3]))
assert r["skipped_steps"] == 2 and all(s.get("skipped") for s in r["steps"]), r["steps"]
PY
echo "ok: train bad input and config files"
