#!/usr/bin/env bash
# The collective watchdog, end to end (3 ranks). Each hang must end the job with a non-zero exit
# within the timeout + 10 s, every live rank naming the collective it waits in and the verdict:
#   1. tests/watchdog_main.cpp's stopped rank (ring and native collectives): "rank 2 has not arrived"
#   2. its schedule mismatch: "schedule mismatch", both calls in the table
#   1b. its "group" mode: the stopped rank is world rank 2 but rank 1 of a replicate group of world
#      ranks {1,2}: world rank 1 must name it by its world rank, never as "rank 1" (alive)
#   3. its slow rank (sleeps below the timeout): no false alarm, exit 0
#   4. `shardlab train --collective-timeout 3` with one rank stopped by SIGSTOP from outside; no
#      rank blames the network once mpirun continues the stopped one; and one stopped as the job
#      starts, before any watchdog exists (it hung)
# Usage: watchdog_check.sh WATCHDOG_BIN SHARDLAB_BIN MPIRUN...
set -u
prog=$1 shardlab=$2
shift 2
mpirun=("$@")
work=$(mktemp -d)
trap 'pkill -KILL -P $$ 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/out" ] && cat "$work/out"; exit 1; }

# Open MPI 4.1's mpirun can deadlock in PMIx_server_finalize after a rank of its job was stopped
# and killed: every rank <defunct>, never reaped (about once in 13 runs of the group case on a
# loaded 2-vCPU machine; once in 25 it segfaulted there instead, a non-zero exit the cases below
# accept). That is the launcher's bug, not the behaviour tested here — the ranks' exits and
# messages — so launch/launcher_guard.sh kills a launcher that outlives all its ranks by 2 s, says
# so in the captured output, and returns the ranks' exit.
source "$(dirname "$0")/../launch/launcher_guard.sh"

# Runs a command, saving its output in $work/out, its exit code in $code, its seconds in $secs.
timed_run() {
  local t0=$SECONDS
  "$@" >"$work/out" 2>&1 &
  launcher_wait $! 2 watchdog_check 2>>"$work/out"
  code=$launcher_rc
  secs=$((SECONDS - t0))
}
expect_text() { grep -qF -- "$1" "$work/out" || fail "expected the output to contain: $1"; }

for algo in ring native; do
  timed_run "${mpirun[@]}" -np 3 "$prog" stop "$algo"
  [ "$code" -ne 0 ] || fail "stop/$algo: exit 0 with a stopped rank"
  [ "$secs" -le 13 ] || fail "stop/$algo: took ${secs} s (timeout 3 s + 10 s)"
  expect_text "where every rank is"
  expect_text "rank 2: no answer"
  for r in 0 1; do
    expect_text "rank $r: collective watchdog: waited"
    grep -q "rank $r: collective watchdog: .* in #3 allgather.* (call 3): rank 2 has not arrived" \
      "$work/out" || fail "stop/$algo: rank $r does not name #3 and rank 2"
  done
  echo "ok: stop/$algo: exit $code after ${secs} s, rank 2 named by ranks 0 and 1"
done

timed_run "${mpirun[@]}" -np 3 "$prog" group ring
[ "$code" -ne 0 ] || fail "group: exit 0 with a stopped rank"
[ "$secs" -le 13 ] || fail "group: took ${secs} s (timeout 3 s + 10 s)"
expect_text "world rank 2 (rank 1 of the replicate group): no answer"
expect_text "world rank 1 (rank 0 of the replicate group): waiting"
grep -q "shardlab: world rank 1 (rank 0 of the replicate group): collective watchdog: .* in #3 allgather.* (call 3): world rank 2 (rank 1 of the replicate group) has not arrived" \
  "$work/out" || fail "group: world rank 1 does not name world rank 2 as not arrived"
! grep -q "rank [01] has not arrived" "$work/out" || fail "group: a live rank is named as not arrived"
echo "ok: group: the stopped world rank 2 named by its world rank and its rank in the group"

timed_run "${mpirun[@]}" -np 3 "$prog" mismatch ring
[ "$code" -ne 0 ] || fail "mismatch: exit 0"
[ "$secs" -le 13 ] || fail "mismatch: took ${secs} s"
expect_text "schedule mismatch"
expect_text "rank 1: waiting"
grep -q "rank 1: waiting .* in #3 reduce_scatter" "$work/out" || fail "mismatch: rank 1's call"
grep -q "rank 0: waiting .* in #3 allgather" "$work/out" || fail "mismatch: rank 0's call"
echo "ok: mismatch: exit $code after ${secs} s, reported as a schedule mismatch"

timed_run "${mpirun[@]}" -np 3 "$prog" slow ring
[ "$code" -eq 0 ] || fail "slow: a rank 1 s late (timeout 3 s) ended the job (exit $code)"
expect_text "all 6 collectives completed"
grep -q "watchdog" "$work/out" && fail "slow: the watchdog spoke"
echo "ok: slow: a rank 1 s late is not a hang"

# A rank stopped as the job starts, before any watchdog exists (the test hook stops rank 1 before
# its first collective): the others' start-up wait ends the job, naming it, where it hung.
SHARDLAB_TEST_STOP_AT=start:1 timed_run "${mpirun[@]}" -np 3 "$shardlab" train --preset tiny --seq 32 \
  --micro-batch 1 --steps 2 --threads 1 --collective-timeout 3 --out "$work/start"
[ "$code" -ne 0 ] || fail "start: exit 0 with a rank stopped at start-up"
[ "$secs" -le 13 ] || fail "start: took ${secs} s (timeout 3 s + 10 s)"
grep -q "rank 0 waited [0-9.]* s for the 3 ranks to start together (--collective-timeout 3 s)" "$work/out" ||
  fail "start: rank 0 does not say it waited for the ranks to start"
echo "ok: start: a rank stopped before the first collective ends the job after ${secs} s (exit $code)"

# A training job, one rank stopped from outside once the steps run.
cd "$work" || exit 1
"${mpirun[@]}" -np 3 "$shardlab" train --preset tiny --seq 32 --micro-batch 1 --steps 100000 \
  --zero 3 --prefetch 1 --threads 1 --collective-timeout 3 --out run >"$work/out" 2>&1 &
launcher=$!
for _ in $(seq 300); do grep -q "^step" "$work/out" && break; sleep 0.1; done
grep -q "^step" "$work/out" || fail "train: no step within 30 s"
victim=$(pgrep -P "$launcher" | sed -n 2p) # the second rank mpirun started
[ -n "$victim" ] || fail "train: could not find the ranks"
kill -STOP "$victim"
t0=$SECONDS
launcher_wait "$launcher" 2 watchdog_check 2>>"$work/out"
code=$launcher_rc
secs=$((SECONDS - t0))
kill -KILL "$victim" 2>/dev/null
[ "$code" -ne 0 ] || fail "train: exit 0 with a stopped rank"
[ "$secs" -le 13 ] || fail "train: took ${secs} s after the stop (timeout 3 s + 10 s)"
expect_text "where every rank is"
expect_text "collective watchdog: waited"
grep -q "has not arrived" "$work/out" || fail "train: no rank named as not arrived"
# The stopped rank, continued by mpirun as it ends the job, answers late: nobody may then blame
# the network or the MPI library (issue 28).
! grep -q "network or the MPI" "$work/out" || fail "train: a rank blames the network or the MPI library"
echo "ok: train: one of 3 ranks stopped; the job ended after ${secs} s (exit $code):"
grep "watchdog\|rank [0-9]: " "$work/out" | grep -v "^step" | head -8
