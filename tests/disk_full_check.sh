#!/usr/bin/env bash
# A full disk, for real: small tmpfs mounts (in a temporary directory; unmounted by an EXIT trap)
# as --out or --save-weights of `shardlab train` on 2 ranks.
#   1. Refused before step 1, exit 2, the free space named, no step run and no steps.jsonl:
#      a. --out on a tmpfs too small for the checkpoints (the same tmpfs takes a run without any);
#      b. --out with room for one rank's share of the checkpoints but not for every rank's (all
#         ranks of a node write their shards into the same --out);
#      c. --save-weights on a tmpfs too small for the weights.
#   And what only adds a little fits: d. a run without checkpoints on a 64 KiB tmpfs (it writes
#      ~15 KB); e. a resume in place on a tmpfs with room for two checkpoints but not three (the one
#      already there is replaced, so the run adds one at a time).
#   2. A disk that fills up during the run (the test stops the ranks with SIGSTOP once training is
#      under way, fills the tmpfs, and continues them; the next write must fail):
#      a. between two checkpoints: the first write that fails (the step log's next row, or the
#         save) ends the run (exit 1) naming its file and "disk full"; the previous checkpoint is
#         intact, and once space is freed a resume from it works;
#      b. the step log or report.json: the run ends naming the file and "disk full", no
#         report.json, no .tmp;
#      c. --save-weights: the run ends naming the weights file and "disk full", no file, no .tmp;
#         the report and step log are still written in --out (another disk), and the message says
#         what was kept.
# Every case runs (in a subshell of its own), and each prints ok or FAIL; the exit status is 1 when
# any failed. Needs root (mount); without it, or when the mount fails, prints SKIP and exits 77.
# Usage: disk_full_check.sh SHARDLAB [MPIRUN [MPIRUN ARGS...]]
#   (default MPIRUN: mpirun --oversubscribe --bind-to none --allow-run-as-root)
set -uo pipefail
shardlab=$(realpath "$1")
shift
if (($#)); then mpirun=("$@"); else mpirun=(mpirun --oversubscribe --bind-to none --allow-run-as-root); fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root (running as uid $(id -u))"
work=$(mktemp -d /tmp/shardlab-disk-full.XXXXXX)
mnt=$work/disk
mkdir "$mnt"
stopped=() # rank processes this script stopped (in the running case), continued on exit
launcher=  # the running case's background run
# Each case runs in a subshell; this trap ends what that subshell left running.
end_case() {
  ((${#stopped[@]})) && kill -CONT "${stopped[@]}" 2>/dev/null
  if [ -n "$launcher" ] && kill -0 "$launcher" 2>/dev/null; then
    kill -TERM "$launcher" 2>/dev/null
    wait "$launcher" 2>/dev/null
  fi
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if mountpoint -q "$mnt"; then umount "$mnt" 2>/dev/null || umount -l "$mnt"; fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log=
fail() {
  echo "FAIL: $*"
  if [ -n "$log" ] && [ -f "$log" ]; then echo "--- output ($log):"; tail -30 "$log"; fi
  exit 1
}
ok() { echo "ok: $*"; }
# A fresh tmpfs of SIZE at $mnt.
fresh_tmpfs() {
  if mountpoint -q "$mnt"; then umount "$mnt" || fail "cannot unmount $mnt"; fi
  mount -t tmpfs -o "size=$1,mode=0755" shardlab-disk-full "$mnt" 2>"$work/mount.err" ||
    skip "cannot mount a tmpfs at $mnt: $(cat "$work/mount.err")"
}
train() { timeout 300 "${mpirun[@]}" -np 2 "$shardlab" train --quiet "$@"; }
# Fills the tmpfs to the last page.
fill() {
  dd if=/dev/zero of="$mnt/filler" bs=64K status=none 2>/dev/null
  dd if=/dev/zero of="$mnt/filler2" bs=4K status=none 2>/dev/null
  local avail
  avail=$(df -B1 --output=avail "$mnt" | tail -1 | tr -d ' ')
  [ "$avail" -lt 8192 ] || fail "could not fill $mnt ($avail bytes still free)"
}
unfill() { rm -f "$mnt/filler" "$mnt/filler2"; }
rows() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
descendants() {
  local c
  for c in $(pgrep -P "$1"); do
    echo "$c"
    descendants "$c"
  done
}
# Runs `train ARGS...` in the background, output to $log; once STEPS_LOG has more than AFTER rows
# (training is under way, so every check before step 1 has passed), stops the ranks, checks that
# fewer than BEFORE rows are written (nothing written yet of what must fail), fills the tmpfs,
# continues the ranks and waits. Sets $code.
run_then_fill() {
  local steps_log=$1 after=$2 before=$3 n pids p
  shift 3
  train "$@" > "$log" 2>&1 &
  launcher=$!
  while kill -0 "$launcher" 2>/dev/null && [ "$(rows "$steps_log")" -le "$after" ]; do sleep 0.005; done
  kill -0 "$launcher" 2>/dev/null || fail "the run ended before step $((after + 1))"
  pids=()
  for p in $(descendants "$launcher"); do
    [ "$(ps -o comm= -p "$p" 2>/dev/null)" = "$(basename "$shardlab" | cut -c1-15)" ] && pids+=("$p")
  done
  [ "${#pids[@]}" -eq 2 ] || fail "found ${#pids[@]} rank processes under the launcher, not 2"
  kill -STOP "${pids[@]}"
  stopped=("${pids[@]}")
  n=$(rows "$steps_log")
  [ "$n" -lt "$before" ] || fail "the run was at step $n when stopped, past step $before (machine too slow for this test?)"
  fill
  kill -CONT "${pids[@]}"
  stopped=()
  code=0
  wait "$launcher" || code=$?
  launcher=
}
# The message must say the disk is full.
says_disk_full() { grep -qiE "disk is full|disk full|ENOSPC|no space left" "$log"; }

small=(--layers 1 --hidden 32 --heads 2 --seq 16 --micro-batch 1)
# tiny at T=16: 3.23M parameters; a checkpoint holds 12 bytes per parameter (fp32 master, m, v),
# 38.8 MB in all (19.4 MB per rank's shard); the weights 4 bytes per parameter, 12.9 MB.
tiny=(--preset tiny --seq 16 --micro-batch 1)

case_1a() {
  # 1a. Too small for the checkpoints: refused before step 1, exit 2, the free space named.
  fresh_tmpfs 8m
  log=$work/1a.log
  train "${tiny[@]}" --steps 2 --save-every 1 --out "$mnt/run" > "$log" 2>&1
  code=$?
  [ "$code" -eq 2 ] || fail "1a: --out on an 8 MiB tmpfs with --save-every: exit $code, expected 2"
  { grep -qF -- "--out $mnt/run: " "$log" && grep -qE "[0-9.]+ [KMG]B free, and this run will write about [0-9.]+ [KMG]B there" "$log"; } ||
    fail "1a: the message does not name --out and its free space"
  [ ! -e "$mnt/run/steps.jsonl" ] || fail "1a: steps.jsonl written by a refused run"
  ok "1a: --out without room for the checkpoints refused before step 1 (exit 2): $(grep -m1 -o -- "--out $mnt/run: .*" "$log")"
  log=$work/1a-none.log
  train "${tiny[@]}" --steps 2 --out "$mnt/run" > "$log" 2>&1 || fail "1a: the same tmpfs refused a run that writes no checkpoint (exit $?)"
  ok "1a: the same tmpfs takes a run without checkpoints"
}

case_1b() {
  # 1b. Room for one rank's share of the previous and the new checkpoint (38.8 MB + the log), not
  # for both ranks' (77.5 MB): every rank writes into this --out, so refused before step 1.
  fresh_tmpfs 56m
  log=$work/1b.log
  train "${tiny[@]}" --steps 3 --save-every 1 --out "$mnt/run" > "$log" 2>&1
  code=$?
  if [ "$code" -ne 2 ] || ! grep -qE "[KMG]B free, and this run will write about" "$log"; then
    fail "1b: --out on a 56 MiB tmpfs, 2 ranks each writing a 19.4 MB shard per checkpoint, two checkpoints at once (77.5 MB): exit $code, expected 2 and a refusal before step 1 naming the free space"
  fi
  [ ! -e "$mnt/run/steps.jsonl" ] || fail "1b: steps.jsonl written by a refused run"
  ok "1b: --out with room for one rank's checkpoint shards only refused before step 1 (exit 2)"
}

case_1c() {
  # 1c. --save-weights on a tmpfs too small for the weights.
  fresh_tmpfs 8m
  log=$work/1c.log
  train "${tiny[@]}" --steps 2 --out "$work/run1c" --save-weights "$mnt/w.safetensors" > "$log" 2>&1
  code=$?
  [ "$code" -eq 2 ] || fail "1c: --save-weights on an 8 MiB tmpfs: exit $code, expected 2"
  { grep -qF -- "--save-weights $mnt/w.safetensors: " "$log" && grep -qE "[0-9.]+ [KMG]B free there, the weights need [0-9.]+ [KMG]B" "$log"; } ||
    fail "1c: the message does not name --save-weights and its free space"
  [ ! -e "$work/run1c/steps.jsonl" ] || fail "1c: steps.jsonl written by a refused run"
  ok "1c: --save-weights without room refused before step 1 (exit 2)"
}

case_1d() {
  # 1d. A run that writes kilobytes fits a 64 KiB disk (it was refused as needing "about 1.1 MB").
  fresh_tmpfs 64k
  log=$work/1d.log
  train "${small[@]}" --steps 2 --out "$mnt/run" > "$log" 2>&1 || fail "1d: a 2-step run without checkpoints refused or failed on a 64 KiB tmpfs (exit $?)"
  [ -f "$mnt/run/report.json" ] || fail "1d: no report.json"
  ok "1d: a run writing $(du -sb "$mnt/run" | cut -f1) bytes fits a 64 KiB tmpfs"
}

case_1e() {
  # 1e. Resume in place: the checkpoint there is replaced, so the run adds one checkpoint at a time
  # (38.8 MB), not two; a 100 MiB tmpfs holds two checkpoints but not three.
  fresh_tmpfs 100m
  log=$work/1e-first.log
  train "${tiny[@]}" --steps 3 --save-every 1 --stop-after 1 --out "$mnt/run" > "$log" 2>&1 || fail "1e: the first step failed (exit $?)"
  log=$work/1e.log
  train "${tiny[@]}" --steps 3 --save-every 1 --resume "$mnt/run" > "$log" 2>&1 || fail "1e: the resume in place was refused or failed (exit $?)"
  grep -q '"iteration": 3' "$mnt/run/checkpoint/meta.json" || fail "1e: the checkpoint is not step 3's"
  ok "1e: a resume in place on a 100 MiB tmpfs (two 38.8 MB checkpoints fit, three do not) ran to step 3"
}

case_2a() {
  # 2a. The disk fills between two checkpoints. A checkpoint at step 300, then a resume stopped at
  # step 301+ and the disk filled: the first write that fails (the step log's next row, or the
  # save at step 600) ends the run naming its file and "disk full"; step 300's checkpoint stays.
  fresh_tmpfs 16m
  out=$mnt/run
  sched=(--steps 2000 --save-every 300)
  log=$work/2a-first.log
  train "${small[@]}" "${sched[@]}" --stop-after 300 --out "$out" > "$log" 2>&1 || fail "2a: the first 300 steps failed (exit $?)"
  [ -f "$out/checkpoint/meta.json" ] || fail "2a: no checkpoint after step 300"
  sums=$(cd "$out/checkpoint" && sha256sum meta.json rank-*.bin)
  log=$work/2a.log
  run_then_fill "$out/steps.jsonl" 300 600 "${small[@]}" "${sched[@]}" --resume "$out" --out "$out"
  [ "$code" -ne 0 ] || fail "2a: the run went on to the end on a full disk (exit 0)"
  [ "$code" -ne 124 ] || fail "2a: the run hung on a full disk (killed by timeout)"
  grep -qE "cannot write (checkpoint file '$out/checkpoint|the step log '$out/steps.jsonl)" "$log" ||
    fail "2a: exit $code; the message names neither the checkpoint file nor the step log"
  says_disk_full || fail "2a: exit $code; the message names the file but does not say the disk is full (ENOSPC)"
  [ "$code" -eq 1 ] || fail "2a: exit $code, expected 1 (an error during the run)"
  ok "2a: a checkpoint save on a full disk ends the run (exit 1): $(grep -m1 -i "error" "$log")"
  [ "$(cd "$out/checkpoint" && sha256sum meta.json rank-*.bin)" = "$sums" ] || fail "2a: the previous checkpoint changed"
  ok "2a: the checkpoint of step 300 is unchanged"
  unfill
  log=$work/2a-resume.log
  train "${small[@]}" "${sched[@]}" --resume "$out" --out "$out" --stop-after 310 > "$log" 2>&1 || fail "2a: resuming after freeing space failed (exit $?)"
  grep -qF "resumed from '$out/checkpoint' at step 300" "$log" || fail "2a: the resume did not start from the step-300 checkpoint"
  ok "2a: after freeing space, the run resumes from step 300"
}

case_2b() {
  # 2b. The disk fills while training: the step log's next row (or report.json at the end) cannot
  # be written. The run ends naming the file and "disk full", and leaves no partial report.
  fresh_tmpfs 16m
  out=$mnt/run
  log=$work/2b.log
  run_then_fill "$out/steps.jsonl" 0 600 "${small[@]}" --steps 600 --out "$out"
  [ "$code" -ne 0 ] || fail "2b: exit 0 on a full disk"
  [ "$code" -ne 124 ] || fail "2b: the run hung on a full disk (killed by timeout)"
  grep -qE "cannot write (the step log '$out/steps.jsonl|'$out/report.json)" "$log" ||
    fail "2b: exit $code; the message names neither steps.jsonl nor report.json"
  says_disk_full || fail "2b: exit $code; the message does not say the disk is full"
  [ ! -e "$out/report.json" ] && [ ! -e "$out/report.json.tmp" ] ||
    fail "2b: a report.json or report.json.tmp was left on the full disk"
  ok "2b: a full disk while training: exit $code, $(grep -m1 "cannot write" "$log")"
}

case_2c() {
  # 2c. The disk fills while training: --save-weights cannot be written at the end.
  fresh_tmpfs 16m
  log=$work/2c.log
  run_then_fill "$work/run2c/steps.jsonl" 0 600 "${small[@]}" --steps 600 --out "$work/run2c" --save-weights "$mnt/w.safetensors"
  [ "$code" -ne 0 ] || fail "2c: exit 0 with the weights on a full disk"
  [ "$code" -ne 124 ] || fail "2c: the run hung on a full disk (killed by timeout)"
  grep -qF "$mnt/w.safetensors" "$log" || fail "2c: exit $code; the message does not name the weights file"
  says_disk_full || fail "2c: exit $code; the message names the file but does not say the disk is full (ENOSPC)"
  [ ! -e "$mnt/w.safetensors" ] && [ ! -e "$mnt/w.safetensors.tmp" ] ||
    fail "2c: a weights file or its .tmp was left on the full disk"
  [ "$code" -eq 1 ] || fail "2c: exit $code, expected 1"
  [ -f "$work/run2c/report.json" ] && [ -f "$work/run2c/steps.jsonl" ] ||
    fail "2c: report.json or steps.jsonl missing from --out (a healthy disk)"
  grep -q '"save_weights_error"' "$work/run2c/report.json" || fail "2c: report.json does not record the failed --save-weights"
  grep -qF "the report and step log are in $work/run2c" "$log" || fail "2c: the message does not say what was kept"
  ok "2c: --save-weights on a full disk: exit $code, $(grep -m1 "w.safetensors" "$log")"
}

failed=()
for c in 1a 1b 1c 1d 1e 2a 2b 2c; do
  ( trap end_case EXIT; "case_$c" )
  rc=$?
  [ "$rc" -ne 77 ] || exit 77 # skip() said why
  [ "$rc" -eq 0 ] || failed+=("$c")
done
if mountpoint -q "$mnt"; then umount "$mnt" || umount -l "$mnt"; fi
((${#failed[@]} == 0)) || { echo "FAILED: ${failed[*]}"; exit 1; }
echo "PASS"
