#!/usr/bin/env bash
# Soak (issue 11): trains the tiny preset for many steps (default 10,000) at ZeRO-3 on 2 ranks and
# checks that nothing grows: tracked bytes per category exactly constant at the end of every step
# after a warm-up, and each rank's RSS at the end (and at its highest) within 1% of its RSS after
# the warm-up. tools/soak_check.py does the checking, prints the table and draws the plot.
#
# Usage: scripts/soak.sh [--steps N] [--ranks K] [--zero Z] [--warmup W] [--out DIR] [--png FILE]
#                        [-- EXTRA TRAIN FLAGS...]
#   SHARDLAB=path/to/shardlab  the binary (default build/shardlab)
#   MPIRUN="cmd ..."           the launcher (default launch/mpirun_local.sh)
#
# What is recorded, in DIR (default: a new directory under /tmp): run/steps.jsonl with every
# rank's tracked bytes per category and RSS at the end of each step (train --log-memory),
# run/report.json, soak.json (the command, CPU, wall time) and soak.png (the plot).
# Exit status: the checker's (0 flat, 1 not flat, 2 records missing), or the run's if it failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steps=10000 ranks=2 zero=3 warmup=20 out="" png=""
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --zero) zero=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --png) png=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
shardlab=${SHARDLAB:-$root/build/shardlab}
read -r -a mpirun <<<"${MPIRUN:-$root/launch/mpirun_local.sh}"
[ -x "$shardlab" ] || { echo "soak.sh: no shardlab binary at $shardlab (build it, or set SHARDLAB)" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/shardlab-soak.XXXXXX)
mkdir -p "$out"
[ -n "$png" ] || png=$out/soak.png
python=/usr/bin/python3 # has numpy and matplotlib (a pyenv python3 on PATH may not)

# The tiny preset (L=4, d=256, H=4, V=256) at T=128, micro-batch 1: about 75 ms a step on 2 cores,
# so 10,000 steps take about 13 minutes. Validation every 500 steps exercises that phase too.
train=(train --preset tiny --seq 128 --micro-batch 1 --zero "$zero" --steps "$steps"
       --val-every 500 --val-batches 2 --quiet --overwrite --log-memory "${extra[@]}")

cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
cmd="${mpirun[*]} -np $ranks $shardlab ${train[*]} --out $out/run"
echo "soak: $steps steps, $ranks ranks, ZeRO-$zero, on $(nproc) CPUs ($cpu); records in $out"
echo "soak: $cmd"
start=$EPOCHREALTIME
status=0
"${mpirun[@]}" -np "$ranks" "$shardlab" "${train[@]}" --out "$out/run" > "$out/run.log" 2>&1 || status=$?
wall=$(awk -v a="$EPOCHREALTIME" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
$python - "$out/soak.json" "$cmd" "$cpu" "$steps" "$ranks" "$zero" "$warmup" "$wall" "$status" <<'PY'
import json, sys
path, cmd, cpu, steps, ranks, zero, warmup, wall, status = sys.argv[1:]
json.dump({"command": cmd, "cpu": cpu, "steps": int(steps), "ranks": int(ranks), "zero": int(zero),
           "warmup": int(warmup), "wall_s": float(wall), "exit_status": int(status)},
          open(path, "w"), indent=2)
PY
if [ "$status" -ne 0 ]; then
  echo "soak.sh: the run failed (exit $status):" >&2
  tail -20 "$out/run.log" >&2
  exit "$status"
fi
printf 'soak: wall time %.1f s\n' "$wall"
exec "$python" "$root/tools/soak_check.py" "$out" --warmup "$warmup" --png "$png"
