#!/usr/bin/env bash
# A Llama's work counts (docs/TIME.md 5.2) against GPT-2's on this machine (issue 25), in a way a
# shared, loaded machine cannot skew much: GPT-2 tiny and tiny-llama are trained back to back
# (interleaved, REPS times each) and priced with the SAME profile (--profile, one calibration), so
# the two predictions differ only by the models' counted work, and the two measurements see the
# same load. The ratio Llama / GPT-2, predicted beside measured, tests the Llama's counts against
# GPT-2's, which bench/time_model.sh holds against this machine on a quiet day. The absolute steps
# are printed too. Writes bench/results/llama_time_model.jsonl and prints a markdown table.
# Usage: bench/llama_time_model.sh [BUILD_DIR] [REPS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} reps=${2:-3} steps=${3:-8}
sl=$build/shardlab
res=bench/results
mkdir -p "$res"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=launch/mpirun_local.sh
# One profile per layout, calibrated once on GPT-2 tiny's shapes (the rates, not the model).
$mpi -np 1 "$sl" calibrate --preset tiny --micro-batch 4 --dtypes bf16 --out "$work/np1.json" >/dev/null
$mpi -np 2 "$sl" calibrate --preset tiny --micro-batch 4 --dtypes bf16 -e 1M --out "$work/np2.json" >/dev/null
out=$res/llama_time_model.jsonl
: >"$out"
# name | ranks | profile | train flags
configs=("z0 n1|1|np1|--zero 0" "z3 n2|2|np2|--zero 3" "z3 n2 ckpt all|2|np2|--zero 3 --checkpoint all")
for rep in $(seq 1 "$reps"); do
  for c in "${configs[@]}"; do
    IFS='|' read -r name n prof flags <<<"$c"
    for preset in tiny tiny-llama; do
      # shellcheck disable=SC2086
      $mpi -np "$n" "$sl" train --preset "$preset" --micro-batch 4 --steps "$steps" --quiet \
        --overwrite --out "$work/run" --profile "$work/$prof.json" $flags >/dev/null
      /usr/bin/python3 - "$work/run/report.json" "$name" "$preset" "$rep" >>"$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
k = max(r["ranks"], key=lambda x: x["time"]["median_step_ms"])  # the slowest rank paces the step
vs = k["time"]["vs"]
print(json.dumps({"config": sys.argv[2], "preset": sys.argv[3], "rep": int(sys.argv[4]),
                  "step_measured": vs["step"]["measured_ms"],
                  "step_predicted": vs["step"]["predicted_ms"],
                  "compute_measured": vs["compute"]["measured_ms"],
                  "compute_predicted": vs["compute"]["predicted_ms"]}))
PY
    done
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("| configuration | GPT-2 tiny step meas / pred ms | tiny-llama step meas / pred ms "
      "| Llama / GPT-2 measured (min..max) | Llama / GPT-2 predicted |")
print("|---|---|---|---|---|")
for c in dict.fromkeys(r["config"] for r in rows):
    by = {p: [r for r in rows if r["config"] == c and r["preset"] == p] for p in ("tiny", "tiny-llama")}
    med = {p: {k: statistics.median(r[k] for r in by[p]) for k in ("step_measured", "step_predicted")}
           for p in by}
    # Per rep: the two runs back to back saw the same load.
    ratios = [l["step_measured"] / g["step_measured"] for g, l in zip(by["tiny"], by["tiny-llama"])]
    print(f"| {c} | {med['tiny']['step_measured']:.1f} / {med['tiny']['step_predicted']:.1f} "
          f"| {med['tiny-llama']['step_measured']:.1f} / {med['tiny-llama']['step_predicted']:.1f} "
          f"| {statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f}) "
          f"| {med['tiny-llama']['step_predicted'] / med['tiny']['step_predicted']:.2f} |")
PY
