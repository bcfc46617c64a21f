#!/usr/bin/env bash
# A rank that stops where the others wait for it no longer hangs the job: 3 ranks, rank 1 stopped
# (SIGSTOP, by the test hook SHARDLAB_TEST_STOP_AT=POINT:1). The others' watchdog ends the job
# within --collective-timeout + 10 s, exit non-zero, naming rank 1 and the call they wait in, with
# the table of where every rank is; rank 1, continued by mpirun as it ends the job, must not blame
# the network or the MPI library. POINT:
#   save (issue 28): after rank 1 wrote its checkpoint file, before the ranks agree that every file
#     is written; no half-written checkpoint replaces anything;
#   validation: a validation begun, before its first collective; the others wait in its mean
#     loss, and their error ends them with its message, not in std::terminate (a scope that
#     restored the statistics used to rethrow the error from its destructor).
# Usage: stall_check.sh save|validation SHARDLAB MPIRUN...
set -u
point=$1 shardlab=$2
shift 2
mpirun=("$@")
work=$(mktemp -d)
trap 'pkill -KILL -P $$ 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log" 2>/dev/null; exit 1; }
timeout=3
case $point in
  save) every=(--save-every 2) call="checkpoint save: did every rank write its file" ;;
  validation) every=(--val-every 2) call="mean loss" ;;
  *) fail "unknown point '$point' (save or validation)" ;;
esac
SHARDLAB_TEST_STOP_AT=$point:1 "${mpirun[@]}" -np 3 "$shardlab" train --preset tiny --seq 32 \
  --micro-batch 1 --steps 4 "${every[@]}" --threads 1 --quiet --collective-timeout $timeout \
  --out "$work/run" >"$work/log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "SHARDLAB_TEST_STOP_AT=$point:1: stopping" "$work/log" && break; sleep 0.1; done
t0=$(date +%s.%N)
grep -q "test hook SHARDLAB_TEST_STOP_AT=$point:1: stopping" "$work/log" || fail "the hook did not fire in 60 s"
wait $job
code=$?
t1=$(date +%s.%N)
[ $code -ne 0 ] || fail "exit 0 with rank 1 stopped in the $point"
secs=$(python3 -c "print(round($t1 - $t0, 1))")
python3 -c "import sys; sys.exit(0 if $t1 - $t0 <= $timeout + 10 else 1)" ||
  fail "the job ended $secs s after rank 1 stopped, more than the timeout $timeout s + 10 s"
grep -q "collective watchdog: where every rank is" "$work/log" || fail "no table of where every rank is"
grep -q "rank 1: no answer" "$work/log" || fail "rank 1 not named in the table"
for r in 0 2; do
  grep -qE "rank $r: collective watchdog: waited .* \\($call\\): rank 1 has not arrived" \
    "$work/log" || fail "rank $r does not name the call ($call) and rank 1"
done
! grep -q "network or the MPI" "$work/log" || fail "a rank blames the network or the MPI library"
! grep -q "rank 1: collective watchdog" "$work/log" ||
  grep -q "rank 1: collective watchdog: .*this rank was stopped or too slow" "$work/log" ||
  fail "rank 1, continued, does not say it was the one stopped"
! grep -q "terminate called" "$work/log" || fail "a rank ended in std::terminate, not with its error"
[ "$point" != save ] || [ ! -e "$work/run/checkpoint" ] ||
  fail "a checkpoint was put in place without rank 1's agreement"
echo "ok: rank 1 stopped in the $point: exit $code $secs s later (timeout $timeout s), rank 1 named"
