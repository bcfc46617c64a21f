#!/usr/bin/env bash
# Ctrl-C and SIGTERM keep the run's work, started the way the README starts it (issue 28), with a
# checkpoint big enough (>= 100 MB over 3 ranks) that Open MPI's kill would cut it short:
#   1. launch/mpirun_local.sh, SIGINT then SIGTERM, TRIES times each: exit 130 / 143, a complete
#      checkpoint at the step the message names, whose weights are bitwise those the run ended
#      with; the first of each resumed to one step more equals an uninterrupted run bitwise
#   2. launch/slurm_train.sbatch (srun stubbed by mpirun), SIGINT and SIGTERM to the script: the
#      same checkpoint
#   3. plain mpirun, Ctrl-C: mpirun kills the ranks a second after its SIGTERM; the message says
#      so and how to stop with a checkpoint next time, promises none, and the last complete
#      checkpoint is intact
# Usage: stop_launch_check.sh SHARDLAB TRIES MPIRUN...
set -u
shardlab=$(realpath "$1")
tries=$2
shift 2
mpirun=("$@")
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
set -m # background jobs in their own process groups, and SIGINT not ignored in them
job=
trap '[ -z "$job" ] || kill -KILL -- -"$job" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log" 2>/dev/null; exit 1; }
# 1 layer x 768 + 8192 tokens: 13.4 M parameters, 161 MB of fp32 master + m + v, ~0.3 s a step.
model=(--layers 1 --hidden 768 --heads 12 --vocab 8192 --seq 16 --micro-batch 1 --steps 100000 --quiet)
train=(train "${model[@]}" --threads 1)
wait_for_steps() { # until the run has logged a step
  for _ in $(seq 600); do [ -s "$1/steps.jsonl" ] && return 0; sleep 0.1; done
  fail "no step logged in 60 s"
}
# The fp32 weights in DIR's checkpoint, hashed as the run hashes its final weights.
checkpoint_hash() {
  "$shardlab" checkpoint export "$1" --out "$work/w.safetensors" >/dev/null || fail "export $1"
  python3 -c 'import hashlib, struct, sys
b = open(sys.argv[1], "rb").read()
print(hashlib.sha256(b[8 + struct.unpack("<Q", b[:8])[0]:]).hexdigest())' "$work/w.safetensors"
}
final_hash() { sed -n 's/^final fp32 master weights sha256 \([0-9a-f]*\)$/\1/p' "$1" | tail -1; }
# Checks the checkpoint a stopped run left in DIR; prints its step.
check_stopped() { # DIR WHAT
  local dir=$1 what=$2 step
  step=$(sed -n 's/.*stopped by SIG[A-Z0-9]* after step \([0-9]*\): checkpoint saved.*/\1/p' "$work/log" | head -1)
  [ -n "$step" ] || fail "$what: no 'stopped ... checkpoint saved' line"
  grep -q "\"iteration\": $step" "$dir/checkpoint/meta.json" 2>/dev/null || fail "$what: no checkpoint at step $step"
  [ ! -e "$dir/checkpoint.tmp" ] && [ ! -e "$dir/checkpoint.prev" ] || fail "$what: a save left its temporary"
  [ "$(checkpoint_hash "$dir")" = "$(final_hash "$work/log")" ] ||
    fail "$what: the checkpoint's weights are not the run's final weights"
  echo "$step"
}
# An uninterrupted run to step K+1 and the resumed one agree bitwise.
check_resume() { # DIR STEP WHAT
  local dir=$1 step=$2 what=$3 ref
  [ -e "$work/ref-$step" ] || "$here/launch/mpirun_local.sh" -np 3 "$shardlab" "${train[@]}" \
    --stop-after $((step + 1)) --out "$work/ref-$step" >"$work/ref-$step.log" 2>&1 || fail "$what: reference run"
  ref=$(final_hash "$work/ref-$step.log")
  "$here/launch/mpirun_local.sh" -np 3 "$shardlab" "${train[@]}" --resume "$dir" \
    --stop-after $((step + 1)) >"$work/log" 2>&1 || fail "$what: the resume failed"
  [ -n "$ref" ] && [ "$(final_hash "$work/log")" = "$ref" ] ||
    fail "$what: resumed at step $step, step $((step + 1)) differs from an uninterrupted run"
}

# --- 1. launch/mpirun_local.sh
for sig in INT TERM; do
  steps=
  for i in $(seq "$tries"); do
    out=$work/local-$sig-$i
    "$here/launch/mpirun_local.sh" -np 3 "$shardlab" "${train[@]}" --out "$out" >"$work/log" 2>&1 &
    job=$!
    wait_for_steps "$out"
    kill -"$sig" "$job"
    wait "$job"
    code=$?
    job=
    expected=$([ $sig = INT ] && echo 130 || echo 143)
    [ $code -eq "$expected" ] || fail "mpirun_local $sig try $i: exit $code, expected $expected"
    grep -q "mpirun_local: SIG$sig: asking the ranks to save a checkpoint" "$work/log" ||
      fail "mpirun_local $sig try $i: the script did not say what it does"
    step=$(check_stopped "$out" "mpirun_local $sig try $i") || exit 1
    if [ "$i" -eq 1 ]; then
      bytes=$(du -sb "$out/checkpoint" | cut -f1)
      [ "$bytes" -ge 100000000 ] || fail "the checkpoint holds $bytes bytes, not >= 100 MB"
      check_resume "$out" "$step" "mpirun_local $sig"
    fi
    rm -rf "$out"
    steps+=" $step"
  done
  echo "ok: 1. mpirun_local.sh, SIG$sig: $tries of $tries saved (steps$steps), exit $expected; resumed bitwise"
done

# --- 2. launch/slurm_train.sbatch, srun stubbed by mpirun (as tests/launch_scripts_check.sh)
mkdir -p "$work/bin"
# shellcheck disable=SC2016 # the stub's own $1 and $@
printf '%s\n' '#!/usr/bin/env bash' 'while [[ $1 == --* ]]; do shift; done' \
  "exec ${mpirun[*]} -np \"\$SLURM_NTASKS\" \"\$@\"" >"$work/bin/srun"
printf '%s\n' '#!/bin/sh' 'true' >"$work/bin/scontrol"
chmod +x "$work/bin/srun" "$work/bin/scontrol"
for sig in INT TERM; do
  (cd "$work" && exec env PATH="$work/bin:$PATH" SLURM_JOB_ID=7 SLURM_JOB_NAME=$sig \
    SLURM_SUBMIT_DIR="$work" SLURM_JOB_NUM_NODES=1 SLURM_NTASKS_PER_NODE=3 SLURM_NTASKS=3 \
    SLURM_CPUS_PER_TASK=1 DEVICE=cpu SAVE_EVERY=0 SHARDLAB="$shardlab" \
    bash "$here/launch/slurm_train.sbatch" "${model[@]}") >"$work/log" 2>&1 &
  job=$!
  wait_for_steps "$work/runs/$sig-7"
  kill -"$sig" "$job"
  wait "$job"
  code=$?
  job=
  [ $code -eq 138 ] || fail "slurm $sig: exit $code, expected 138 (the ranks' exit after SIGUSR1)"
  step=$(check_stopped "$work/runs/$sig-7" "slurm $sig") || exit 1
  echo "ok: 2. slurm_train.sbatch, SIG$sig to the script: checkpoint at step $step"
done

# --- 3. plain mpirun: no save promised, the last complete checkpoint intact
out=$work/plain
"${mpirun[@]}" -np 3 "$shardlab" "${train[@]}" --save-every 2 --out "$out" >"$work/log" 2>&1 &
job=$!
for _ in $(seq 600); do [ -e "$out/checkpoint/meta.json" ] && break; sleep 0.1; done
[ -e "$out/checkpoint/meta.json" ] || fail "plain: no checkpoint in 60 s"
kill -INT "$job"
wait "$job"
code=$?
job=
[ $code -ne 0 ] || fail "plain: exit 0 after Ctrl-C"
grep -q "SIGTERM from mpirun: Open MPI ends the job and kills this rank" "$work/log" &&
  grep -q "no checkpoint is promised" "$work/log" && grep -q "launch/mpirun_local.sh" "$work/log" &&
  grep -q "kill -USR1 <mpirun pid>" "$work/log" || fail "plain: the message does not tell what happens"
! grep -q "a checkpoint will be saved" "$work/log" || fail "plain: a checkpoint was promised"
"$shardlab" checkpoint inspect "$out" >"$work/inspect" 2>&1 || { cat "$work/inspect"; fail "plain: the checkpoint left is not complete"; }
step=$(sed -n 's/.*step \([0-9]*\) of 100000.*/\1/p' "$work/inspect")
saved=$(sed -n 's/.*stopped by SIG[A-Z0-9]* after step \([0-9]*\): checkpoint saved.*/\1/p' "$work/log" | head -1)
[ -z "$saved" ] || [ "$saved" = "$step" ] || fail "plain: the message says step $saved was saved, the checkpoint is at $step"
echo "ok: 3. plain mpirun, Ctrl-C: the truth told, the checkpoint at step $step complete (exit $code)"
