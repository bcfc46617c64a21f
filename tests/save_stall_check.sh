#!/usr/bin/env bash
# A rank that stops inside a checkpoint save no longer hangs the job (issue 28): 3 ranks, rank 1
# stopped (SIGSTOP, by the test hook SHARDLAB_TEST_STOP_AT=save:1) after writing its file, before
# the ranks agree that every file is written. The others' watched agreement ends the job within
# --collective-timeout + 10 s, exit non-zero, naming rank 1 and the save's call, with the table of
# where every rank is; no half-written checkpoint replaces anything. Rank 1, continued by mpirun
# as it ends the job, must not blame the network or the MPI library.
# Usage: save_stall_check.sh SHARDLAB MPIRUN...
set -u
shardlab=$1
shift
mpirun=("$@")
work=$(mktemp -d)
trap 'pkill -KILL -P $$ 2>/dev/null; cp "$work/log" /tmp/stall.log; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log" 2>/dev/null; exit 1; }
timeout=3
SHARDLAB_TEST_STOP_AT=save:1 "${mpirun[@]}" -np 3 "$shardlab" train --preset tiny --seq 32 \
  --micro-batch 1 --steps 4 --save-every 2 --threads 1 --quiet --collective-timeout $timeout \
  --out "$work/run" >"$work/log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "SHARDLAB_TEST_STOP_AT=save:1: stopping" "$work/log" && break; sleep 0.1; done
t0=$(date +%s.%N)
grep -q "test hook SHARDLAB_TEST_STOP_AT=save:1: stopping" "$work/log" || fail "the hook did not fire in 60 s"
wait $job
code=$?
t1=$(date +%s.%N)
[ $code -ne 0 ] || fail "exit 0 with rank 1 stopped in the save"
secs=$(python3 -c "print(round($t1 - $t0, 1))")
python3 -c "import sys; sys.exit(0 if $t1 - $t0 <= $timeout + 10 else 1)" ||
  fail "the job ended $secs s after rank 1 stopped, more than the timeout $timeout s + 10 s"
grep -q "collective watchdog: where every rank is" "$work/log" || fail "no table of where every rank is"
grep -q "rank 1: no answer" "$work/log" || fail "rank 1 not named in the table"
for r in 0 2; do
  grep -q "rank $r: collective watchdog: waited .* (checkpoint save: did every rank write its file): rank 1 has not arrived" \
    "$work/log" || fail "rank $r does not name the save's agreement and rank 1"
done
! grep -q "network or the MPI" "$work/log" || fail "a rank blames the network or the MPI library"
! grep -q "rank 1: collective watchdog" "$work/log" ||
  grep -q "rank 1: collective watchdog: .*this rank was stopped or too slow" "$work/log" ||
  fail "rank 1, continued, does not say it was the one stopped"
[ ! -e "$work/run/checkpoint" ] || fail "a checkpoint was put in place without rank 1's agreement"
echo "ok: rank 1 stopped in the save: exit $code $secs s later (timeout $timeout s), rank 1 named"
