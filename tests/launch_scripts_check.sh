#!/usr/bin/env bash
# The launch scripts (launch/*.sh, launch/*.sbatch) parse, and launch/slurm_train.sbatch does what
# docs/LAUNCH.md says, with no Slurm here: its SLURM_* variables set by hand, srun and scontrol
# replaced by stubs on PATH (the srun stub starts the ranks with mpirun).
#   1. bash -n on every script under launch/
#   2. DRY_RUN=1: the srun and mpirun command lines (ranks, cores, binding, --out per job) and the
#      choice of --resume (RESUME given; the job's own checkpoint wins)
#   3. for real, 2 ranks on the CPU: SIGUSR1 to the script (Slurm's time-limit warning) reaches the
#      ranks, which checkpoint and stop; the script requeues its job; run again as the requeued job,
#      it resumes from its own run directory
#   4. launch/mpirun_local.sh's guard (launch/launcher_guard.sh) with a stand-in mpirun
#      (SHARDLAB_MPIRUN_PROGRAM): one that never reaps its exited ranks is killed after 5 s and the
#      ranks' exit returned (a rank's code, a rank's signal); one that reaps them and takes 2 s to
#      finish is waited for
# Usage: launch_scripts_check.sh SHARDLAB MPIRUN...
set -uo pipefail
shardlab=$(realpath "$1")
shift
here=$(cd "$(dirname "$0")/.." && pwd)
script=$here/launch/slurm_train.sbatch
work=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill -KILL -- -"$pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log" 2>/dev/null; exit 1; }

# --- 1. every script parses
n=0
for f in "$here"/launch/*.sh "$here"/launch/*.sbatch; do
  bash -n "$f" || fail "bash -n $f"
  n=$((n + 1))
done
echo "ok: 1. bash -n on $n launch scripts"

# --- 2. the command lines, as a 2-node x 4-GPU job 42 would run them
cd "$work" || exit 1
slurm=(SLURM_JOB_ID=42 SLURM_JOB_NAME=gpt SLURM_JOB_NUM_NODES=2 SLURM_NTASKS_PER_NODE=4
  SLURM_CPUS_PER_TASK=8 SLURM_SUBMIT_DIR="$work" SHARDLAB="$shardlab")
dry() { env "${slurm[@]}" DRY_RUN=1 "$@" bash "$script" --preset tiny >"$work/log" 2>&1 || fail "DRY_RUN $*"; tail -n 1 "$work/log"; }
expect() { # expect WHAT LINE PATTERN...
  local what=$1 line=$2
  shift 2
  for p in "$@"; do [[ " $line " == *" $p "* ]] || fail "$what: no '$p' in: $line"; done
}
line=$(dry)
expect srun "$line" srun --mpi=pmix --ntasks-per-node=4 --cpus-per-task=8 --cpu-bind=cores \
  --gpu-bind=none "$shardlab train --device cuda --out runs/gpt-42 --save-every 500 --preset tiny"
[[ $line != *--resume* ]] || fail "a new job resumes: $line"
[[ $line != *--threads* ]] || fail "--threads with --device cuda: $line"
line=$(dry LAUNCHER=mpirun DEVICE=cpu)
expect mpirun "$line" "mpirun -np 8 --map-by ppr:4:node:PE=8 --bind-to core" "--device cpu --threads 8"
line=$(dry RESUME=runs/gpt-41)
expect RESUME "$line" "--resume runs/gpt-41 --preset tiny"
mkdir -p runs/gpt-42/checkpoint
line=$(dry RESUME=runs/gpt-41)
expect requeued "$line" "--resume runs/gpt-42 --preset tiny"
rm -r runs
env "${slurm[@]}" LAUNCHER=ssh bash "$script" >"$work/log" 2>&1
code=$?
{ [ $code -eq 2 ] && grep -q "LAUNCHER=ssh: use srun or mpirun" "$work/log"; } || fail "LAUNCHER=ssh is not refused (exit $code)"
echo "ok: 2. srun and mpirun command lines; --resume from RESUME, or the job's own checkpoint"

# --- 3. for real: the time-limit signal, the checkpoint, the requeue, the resume
mkdir bin
# shellcheck disable=SC2016 # the stub's own $1 and $@
printf '%s\n' '#!/usr/bin/env bash' '# srun OPTIONS... CMD: the ranks through mpirun' \
  'while [[ $1 == --* ]]; do shift; done' "exec $* -np \"\$SLURM_NTASKS\" \"\$@\"" >bin/srun
printf '%s\n' '#!/bin/sh' "echo \"\$*\" >>$work/scontrol.log" >bin/scontrol
chmod +x bin/srun bin/scontrol
real=(env PATH="$work/bin:$PATH" "${slurm[@]}" SLURM_JOB_NUM_NODES=1 SLURM_NTASKS_PER_NODE=2
  SLURM_NTASKS=2 SLURM_CPUS_PER_TASK=1 DEVICE=cpu)
train=(--preset tiny --seq 32 --micro-batch 1 --quiet)
setsid "${real[@]}" bash "$script" "${train[@]}" --steps 100000 >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -s runs/gpt-42/steps.jsonl ] && break; sleep 0.1; done
[ -s runs/gpt-42/steps.jsonl ] || fail "3: no step logged in 30 s"
kill -USR1 "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$pid" 2>/dev/null || fail "3: the script still runs 30 s after SIGUSR1 (not passed on to the ranks?)"
wait "$pid"
code=$?
pid=
[ $code -eq 138 ] || fail "3: the script exited $code after SIGUSR1, expected 138 (the ranks' exit)"
step=$(sed -n 's/.*"iteration": *\([0-9]*\).*/\1/p' runs/gpt-42/checkpoint/meta.json)
[ -n "$step" ] || fail "3: no checkpoint in runs/gpt-42"
[ "$(cat scontrol.log 2>/dev/null)" = "requeue 42" ] || fail "3: the job was not requeued (scontrol: $(cat scontrol.log 2>/dev/null))"
"${real[@]}" bash "$script" "${train[@]}" --steps 100000 --stop-after $((step + 1)) >"$work/log" 2>&1 ||
  fail "3: the requeued job failed"
grep -q "resumed from .* at step $step" "$work/log" || fail "3: the requeued job did not resume at step $step"
echo "ok: 3. SIGUSR1 to the script: checkpoint at step $step, job requeued, resumed at step $step"

# --- 4. the launcher guard: a stand-in mpirun whose ranks exit at once with the codes given after
# -np N, or in CODES (a negative one: killed by that signal); HANG=1 never reaps them (Open MPI
# 4.1's finalize hang), HANG=0 reaps them and takes 2 s more before its exit 7
cat >bin/fake_mpirun <<'PY'
#!/usr/bin/env python3
import os, signal, sys, time
codes = [int(c) for c in os.environ.get("CODES", "").split()] or \
        [int(c) for c in sys.argv[sys.argv.index("-np") + 2:]]
for c in codes:
    if os.fork() == 0:
        os.kill(os.getpid(), -c) if c < 0 else os._exit(c)
if os.environ["HANG"] == "1":
    time.sleep(60)
for _ in codes:
    os.wait()
time.sleep(2)
sys.exit(7)
PY
chmod +x bin/fake_mpirun
guarded() { # guarded HANG CODES...: runs mpirun_local.sh with the stand-in; sets $code and $secs
  local t0=$SECONDS hang=$1
  shift
  SHARDLAB_MPIRUN_PROGRAM=$work/bin/fake_mpirun HANG=$hang "$here/launch/mpirun_local.sh" -np $# "$@" >"$work/log" 2>&1
  code=$? secs=$((SECONDS - t0))
}
guarded 1 0 3 0
{ [ $code -eq 3 ] && grep -q "mpirun_local: every rank exited 5 s ago and mpirun has not" "$work/log"; } ||
  fail "4: a launcher that never reaps its ranks: exit $code, expected 3 and the guard's message"
((secs <= 10)) || fail "4: the hung launcher was killed after $secs s, expected 5 to 6"
guarded 1 0 -9
[ $code -eq 137 ] || fail "4: a rank killed by SIGKILL, the launcher hung: exit $code, expected 137"
guarded 0 0 0
{ [ $code -eq 7 ] && ! grep -q "every rank exited" "$work/log"; } ||
  fail "4: a launcher that reaps its ranks and exits 7: exit $code, or it was killed"
echo "ok: 4. mpirun_local.sh kills a launcher that never reaps its ranks (exit 3, 137 from the ranks) and waits for one that does"
# The Slurm script guards its LAUNCHER=mpirun the same way (its mpirun is the one on PATH).
mkdir guardbin && ln -s "$work/bin/fake_mpirun" guardbin/mpirun
t0=$SECONDS
env PATH="$work/guardbin:$PATH" "${slurm[@]}" LAUNCHER=mpirun HANG=1 CODES="0 5" \
  bash "$script" --preset tiny >"$work/log" 2>&1
code=$? secs=$((SECONDS - t0))
{ [ $code -eq 5 ] && grep -q "slurm_train: every rank exited 5 s ago" "$work/log"; } ||
  fail "4: slurm_train.sbatch with a launcher that never reaps its ranks: exit $code, expected 5 and the guard's message"
((secs <= 10)) || fail "4: slurm_train.sbatch killed the hung launcher after $secs s, expected 5 to 6"
echo "ok: 4. slurm_train.sbatch (LAUNCHER=mpirun) is guarded the same way"
