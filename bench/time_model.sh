#!/usr/bin/env bash
# The time model against this machine (issue 22, docs/TIME.md section 11): train each
# configuration REPS times with --calibrate (the profile measured at the start of that run, for
# its model, micro-batch and layout: on a machine whose load drifts, the rates the run sees) and
# record, per run, the measured medians and the prediction from report.json. The per-layout
# profiles calibrated first are kept for bench/plan_fit.py and `plan --profile` by hand. Writes bench/results/time_model.jsonl, the profiles, and
# (tools/plot_time_model.py) bench/results/time_model.png and the markdown table it prints.
# PRESET tiny-llama (issue 25) runs a Llama's shorter list (stages 0 and 3, 1-2 ranks,
# checkpointing) and writes bench/results/time_model_tiny-llama.{jsonl,png} and its profiles.
# Usage: bench/time_model.sh [BUILD_DIR] [REPS] [STEPS] [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} reps=${2:-3} steps=${3:-8} preset=${4:-tiny}
sl=$build/shardlab
res=bench/results
mkdir -p "$res"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=launch/mpirun_local.sh
stem=time_model
[ "$preset" = tiny ] || stem=time_model_$preset
$mpi -np 1 "$sl" calibrate --preset "$preset" --micro-batch 4 --dtypes bf16 --out "$res/${stem}_profile_np1.json" >/dev/null
$mpi -np 2 "$sl" calibrate --preset "$preset" --micro-batch 4 --dtypes bf16 -e 1M --out "$res/${stem}_profile_np2.json" >/dev/null
[ "$preset" != tiny ] || $mpi -np 4 "$sl" calibrate --preset tiny --micro-batch 4 --dtypes bf16 -e 1M \
  --ranks-per-node 2 --out "$res/time_model_profile_np4.json" >/dev/null
out=$res/$stem.jsonl
: >"$out"
# name | ranks | profile | train flags
llama_configs=(
  "z0 n1|1|np1|--zero 0"
  "z0 n2|2|np2|--zero 0"
  "z3 n2|2|np2|--zero 3"
  "z3 n2 ckpt all|2|np2|--zero 3 --checkpoint all"
)
configs=(
  "z0 n1|1|np1|--zero 0"
  "z0 n2|2|np2|--zero 0"
  "z1 n2|2|np2|--zero 1"
  "z2 n2|2|np2|--zero 2"
  "z3 n2|2|np2|--zero 3"
  "z3 n2 prefetch 1|2|np2|--zero 3 --prefetch 1"
  "z2 n2 offload|2|np2|--zero 2 --offload"
  "z3 n2 ckpt all|2|np2|--zero 3 --checkpoint all"
  "z3 n4|4|np4|--zero 3 --ranks-per-node 2"
  "z3 n4 hybrid 2x2|4|np4|--zero 3 --ranks-per-node 2 --shard-group 2"
  "z2 n2 6L-384|2|np2|--zero 2 --layers 6 --hidden 384 --heads 6"
)
[ "$preset" = tiny ] || configs=("${llama_configs[@]}")
for rep in $(seq 1 "$reps"); do
  for c in "${configs[@]}"; do
    IFS='|' read -r name n _ flags <<<"$c"
    # shellcheck disable=SC2086
    $mpi -np "$n" "$sl" train --preset "$preset" --micro-batch 4 --steps "$steps" --quiet --overwrite \
      --out "$work/run" --calibrate $flags >/dev/null
    /usr/bin/python3 - "$work/run/report.json" "$name" "$rep" >>"$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
# The slowest rank's median step is the step (every rank waits for it at the collectives).
k = max(r["ranks"], key=lambda x: x["time"]["median_step_ms"])
vs = k["time"]["vs"]
print(json.dumps({"config": sys.argv[2], "rep": int(sys.argv[3]), "rank": k["rank"],
                  **{f"{p}_{s}": vs[p][f"{s}_ms"] for p in ("step", "compute", "exposed_comm")
                     for s in ("measured", "predicted")},
                  "critical_path": k["time"]["predicted"]["critical_path"]}))
PY
  done
done
/usr/bin/python3 tools/plot_time_model.py "$out" "$res/$stem.png"
