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
"$expect" 2 "--global-batch 6 is not divisible by N x micro-batch = 2 x 4 = 8" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --micro-batch 4 --global-batch 6
"$expect" 2 "error on rank 0,1: token file '$work/no-such-corpus.txt': does not exist" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --data "$work/no-such-corpus.txt"
"$expect" 2 "bad --checkpoint 'sometimes'" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --checkpoint sometimes
"$expect" 2 "--prefetch applies to --zero 3 only" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --zero 2 --prefetch 1
head -c 100 /usr/share/common-licenses/GPL-3 > "$work/tiny.txt"
"$expect" 2 "too small for 2 ranks" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --data "$work/tiny.txt"
# A file only one rank can see (node-local paths): every rank stops with rank 1's message, no hang.
mkdir -p "$work/a" "$work/b"
head -c 20000 /usr/share/common-licenses/GPL-3 > "$work/a/d.txt"
"$expect" 2 "error on rank 1: token file 'd.txt': does not exist" timeout 60 "${mpirun[@]}" \
  -np 1 -wdir "$work/a" "$shardlab" train "${small[@]}" --data d.txt --out "$work/a/o" : \
  -np 1 -wdir "$work/b" "$shardlab" train "${small[@]}" --data d.txt --out "$work/b/o"
# Offload with stage 0 is supported (every rank updates the whole model on its host).
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --zero 0 --offload --out "$work/z0off" >/dev/null
# A checkpoint must be resumed with the same N and config, and must be intact.
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --save-every 2 --stop-after 2 --out "$work/run" >/dev/null
"$expect" 2 "was written by 2 ranks; resume it with mpirun -np 2" "${mpirun[@]}" -np 3 "$shardlab" train "${small[@]}" --steps 4 --resume "$work/run" --out "$work/run3"
"$expect" 2 "was written with lr = " "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --lr 0.5 --resume "$work/run" --out "$work/run"
# A save that died between its two renames leaves only checkpoint.prev: resume finds it.
cp -r "$work/run" "$work/crashed" && mv "$work/crashed/checkpoint" "$work/crashed/checkpoint.prev"
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --save-every 2 --resume "$work/crashed" --out "$work/crashed" > "$work/crashed.log"
grep -q "resumed from" "$work/crashed.log" # (not through a pipe: grep -q would close it early and mpirun take SIGPIPE)
printf 'X' | dd of="$work/run/checkpoint/rank-1.bin" bs=1 seek=100 conv=notrunc status=none
"$expect" 2 "is corrupt (checksum mismatch)" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --resume "$work/run" --out "$work/run"
"$expect" 2 "no checkpoint in" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --steps 4 --resume "$work/nothing" --out "$work/x"
# Config files: applied (zero, micro-batch), overridden by flags (--hidden, --steps), and checked.
printf 'hidden = 48\nzero = 2\nmicro-batch = 3\nsteps = 9\n' > "$work/run.toml"
"${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --config "$work/run.toml" --steps 2 --out "$work/cfg" >/dev/null
/usr/bin/python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['config']; assert c['model']['hidden']==32 and c['zero']==2 and c['micro_batch']==3 and c['steps']==2, c" "$work/cfg/report.json"
printf 'bogus = 1\n' > "$work/bad.toml"
"$expect" 2 "unknown key 'bogus'" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --config "$work/bad.toml"
printf 'zero = "three"\n' > "$work/bad.toml"
"$expect" 2 "bad value for 'zero'" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --config "$work/bad.toml"
printf 'zero = \n' > "$work/bad.toml"
"$expect" 2 "is not valid TOML" "${mpirun[@]}" -np 2 "$shardlab" train "${small[@]}" --config "$work/bad.toml"
echo "ok: train bad input and config files"
