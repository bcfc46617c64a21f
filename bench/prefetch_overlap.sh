#!/usr/bin/env bash
# ZeRO-3 with --prefetch 0 and 1 on 2 ranks, side by side in one run (docs/BENCHMARKS.md): the
# median step time, split into compute and *exposed* communication (the time the compute stream
# waited for the comm stream), in two placements:
#   per-rank core  each rank bound to one core (mpirun --bind-to core): its comm stream shares the
#                  core with its compute;
#   reserved core  both ranks' compute on CPU 0, both ranks' comm streams on CPU 1 (--comm-cpus 1):
#                  communication has a core of its own, as a GPU's copy engines and NICs are.
# Runs alternate prefetch 0 / 1, three times each. Writes bench/results/prefetch_overlap.{jsonl,png}.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/prefetch_overlap.jsonl
mkdir -p bench/results
: > "$out"
model=(--layers 4 --hidden 512 --heads 8 --seq 64 --vocab 256 --micro-batch 1 --grad-accum 2
       --precision fp32 --steps 20 --zero 3 --val-every 0 --quiet --threads 1)
mpirun=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
export OMPI_MCA_btl=self,vader
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for placement in per-rank-core reserved-core; do
  for rep in 1 2 3; do
    for pf in 0 1; do
      if [ $placement = per-rank-core ]; then
        cmd=("${mpirun[@]}" --bind-to core -np 2 build/shardlab train "${model[@]}")
      else
        cmd=("${mpirun[@]}" --bind-to none -np 2 taskset -c 0 build/shardlab train "${model[@]}" --comm-cpus 1)
      fi
      echo "$placement, prefetch $pf, run $rep" >&2
      rm -rf "$work/run"
      "${cmd[@]}" --prefetch $pf --out "$work/run" --overwrite >/dev/null
      /usr/bin/python3 - "$work/run/report.json" "$placement" "$pf" "$rep" >> "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["ranks"][0]["time"]
print(json.dumps({"placement": sys.argv[2], "prefetch": int(sys.argv[3]), "run": int(sys.argv[4]),
                  "median_step_ms": t["median_step_ms"], "median_exposed_comm_ms": t["median_exposed_comm_ms"],
                  "allgather_s": r["ranks"][0]["comm"]["allgather"]["seconds"], "steps": t["steps"]}))
PY
      tail -1 "$out" >&2
    done
  done
done
/usr/bin/python3 tools/plot_prefetch_bench.py "$out" bench/results/prefetch_overlap.png
