#!/usr/bin/env bash
# The README's main job, shortened to 120 steps: on the default corpus the validation loss must
# fall clearly — from ~5.5 nats per byte (ln 256, an untrained model) to below 3.0 — and the
# sample and the report must be there. (The full 600-step demo reaches ~2.26; docs/BENCHMARKS.md.)
set -euo pipefail
shardlab=$1
shift
mpirun=("$@")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${mpirun[@]}" -np 2 "$shardlab" train --config "$here/../examples/demo.toml" --steps 120 --val-every 40 \
  --sample 40 --out "$work/demo" > "$work/log.txt"
grep -q "^sample (40 tokens" "$work/log.txt"
grep -q "^rank 1 communication" "$work/log.txt"
/usr/bin/python3 - "$work/demo/report.json" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
first, val = steps[0]["loss"], [s["val_loss"] for s in steps if "val_loss" in s]
assert first > 5.0, first
assert val[-1] < 3.0 and val[-1] < val[0], val
print(f"ok: training loss at step 1 {first:.3f}; validation loss {' -> '.join(f'{v:.3f}' for v in val)}")
PY
/usr/bin/python3 "$here/../tools/plot_plan_memory.py" "$work/demo/report.json" "$work/memory.png"
test -s "$work/memory.png"
