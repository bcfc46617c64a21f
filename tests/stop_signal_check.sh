#!/usr/bin/env bash
# Stopping a run from outside keeps its work (issue 11):
#   1. one process, Ctrl-C (SIGINT): a checkpoint at the end of the step, the step named, exit 130;
#      a resume continues from that step
#   1b. SIGHUP (the terminal closed) and SIGPIPE (`| head`: its output closed) stop the same way
#   2. a second Ctrl-C while the first is pending aborts at once, without a checkpoint
#   3. 2 ranks under mpirun, `kill -USR1 <mpirun>` (what `srun --signal=USR1@T` does; Open MPI
#      forwards it): every rank stops at the same step, one checkpoint, exit 138
#   4. 2 ranks, SIGTERM to mpirun, which ends the job (SIGTERM to the ranks, SIGKILL a second
#      later): no checkpoint is promised; one saved in time is at the step named (issue 28:
#      tests/stop_launch_check.sh shows the launch scripts' way to a save)
# Usage: stop_signal_check.sh SHARDLAB MPIRUN...
set -u
shardlab=$1
shift
mpirun=("$@")
work=$(mktemp -d)
trap 'pkill -KILL -P $$ 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log" 2>/dev/null; exit 1; }
train=(train --preset tiny --seq 32 --micro-batch 1 --steps 100000 --threads 1 --quiet)
wait_for_steps() { # until the run has logged a step
  for _ in $(seq 300); do [ -s "$1/steps.jsonl" ] && return 0; sleep 0.1; done
  fail "no step logged in 30 s"
}
# A run into $1, signal $2 once it has logged a step; its exit code in $code.
signal_run() {
  "$shardlab" "${train[@]}" --out "$1" >"$work/log" 2>&1 &
  local pid=$!
  wait_for_steps "$1"
  kill -"$2" $pid
  wait $pid
  code=$?
}

signal_run "$work/a" INT
[ $code -eq 130 ] || fail "1: exit $code after SIGINT, expected 130"
step=$(sed -n 's/.*stopped by SIGINT (Ctrl-C) after step \([0-9]*\): checkpoint saved.*/\1/p' "$work/log")
[ -n "$step" ] || fail "1: no 'stopped by SIGINT ... checkpoint saved' line"
grep -q "\"iteration\": $step" "$work/a/checkpoint/meta.json" || fail "1: the checkpoint is not at step $step"
# --resume DIR alone continues in DIR (no --out): its checkpoint moves on to the new step there.
(cd "$work" && "$shardlab" "${train[@]}" --resume "$work/a" --stop-after $((step + 2)) >"$work/log" 2>&1) ||
  fail "1: the resume failed"
grep -q "resumed from .* at step $step" "$work/log" || fail "1: did not resume at step $step"
grep -q "\"iteration\": $((step + 2))" "$work/a/checkpoint/meta.json" && [ ! -e "$work/out" ] ||
  fail "1: --resume without --out did not continue in the run's directory"
echo "ok: 1. SIGINT: checkpoint at step $step, exit 130, resumed from it"

# 1b. The terminal closed (SIGHUP) stops as Ctrl-C does; so does an output closed under the run
# (`| head`: SIGPIPE, which killed it with no checkpoint), whose lines then go nowhere.
signal_run "$work/hup" HUP
[ $code -eq 129 ] || fail "1b: exit $code after SIGHUP, expected 129"
grep -q "stopped by SIGHUP (its terminal closed) after step [0-9]*: checkpoint saved" "$work/log" ||
  fail "1b: no 'stopped by SIGHUP ... checkpoint saved' line"
[ -f "$work/hup/checkpoint/meta.json" ] || fail "1b: no checkpoint after SIGHUP"
"$shardlab" train --preset tiny --seq 32 --micro-batch 1 --steps 100000 --threads 1 --log-every 1 \
  --out "$work/pipe" 2>"$work/log" | head -2 >/dev/null
code=${PIPESTATUS[0]}
[ $code -eq 141 ] || fail "1b: exit $code with its output closed, expected 141"
grep -q "stopped by SIGPIPE (its output was closed) after step [0-9]*: checkpoint saved" "$work/log" ||
  fail "1b: no 'stopped by SIGPIPE ... checkpoint saved' line"
[ -f "$work/pipe/checkpoint/meta.json" ] || fail "1b: no checkpoint after its output closed"
echo "ok: 1b. SIGHUP and a closed output: a checkpoint each, exits 129 and 141"

# Steps of ~1 s here, so the second signal arrives while the first waits for the step's end.
"$shardlab" "${train[@]}" --seq 256 --micro-batch 8 --out "$work/b" >"$work/log" 2>&1 &
pid=$!
wait_for_steps "$work/b"
kill -INT $pid
sleep 0.2
kill -INT $pid
wait $pid
code=$?
[ $code -ne 0 ] || fail "2: exit 0 after two SIGINTs"
grep -q "second stop request: aborting" "$work/log" || fail "2: no abort message"
[ ! -e "$work/b/checkpoint" ] || fail "2: a checkpoint was written after all"
echo "ok: 2. a second SIGINT aborts at once (exit $code)"

for sig in USR1 TERM; do
  "${mpirun[@]}" -np 2 "$shardlab" "${train[@]}" --out "$work/$sig" >"$work/log" 2>&1 &
  launcher=$!
  wait_for_steps "$work/$sig"
  kill -$sig $launcher
  wait $launcher
  code=$?
  if [ "$sig" = TERM ]; then
    grep -q "SIGTERM from mpirun: .* no checkpoint is promised" "$work/log" ||
      fail "TERM: the ranks do not say that mpirun kills them"
    if ! grep -q "stopped by SIGTERM after step" "$work/log"; then
      echo "ok: TERM: mpirun killed the ranks before a save, as the message said (exit $code)"
      continue
    fi
  fi
  [ -f "$work/$sig/checkpoint/meta.json" ] || fail "$sig: no checkpoint"
  step=$(sed -n 's/.*stopped by SIG[A-Z0-9]* after step \([0-9]*\).*/\1/p' "$work/log" | head -1)
  [ -n "$step" ] && grep -q "\"iteration\": $step" "$work/$sig/checkpoint/meta.json" ||
    fail "$sig: the checkpoint is not at the step the message names"
  [ "$sig" = TERM ] || [ $code -eq 138 ] || fail "$sig: exit $code, expected 138"
  echo "ok: ${sig}: 2 ranks stopped at step $step with one checkpoint (exit $code)"
done
