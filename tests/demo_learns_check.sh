#!/usr/bin/env bash
# A README demo config (examples/CONFIG.toml: demo = the GPT-2, llama_demo = the Llama), shortened
# to 120 steps on 2 ranks: on the default corpus the validation loss must fall clearly — from
# ~5.5 nats per byte (ln 256, an untrained model) to below 3.0 — and the sample, the report's
# communication table and its memory plot must be there. (The full 600-step GPT-2 demo reaches
# ~2.26; docs/BENCHMARKS.md.) Usage: demo_learns_check.sh CONFIG SHARDLAB MPIRUN [MPIRUN ARGS...]
set -euo pipefail
config=$1 shardlab=$2
shift 2
mpirun=("$@")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${mpirun[@]}" -np 2 "$shardlab" train --config "$here/../examples/$config.toml" --steps 120 \
  --val-every 40 --sample 40 --out "$work/demo" > "$work/log.txt"
grep -q "^sample (40 tokens" "$work/log.txt"
grep -q "^rank 1 communication" "$work/log.txt"
/usr/bin/python3 - "$work/demo/report.json" "$config" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
first, val = steps[0]["loss"], [s["val_loss"] for s in steps if "val_loss" in s]
assert first > 5.0, first
assert val[-1] < 3.0 and val[-1] < val[0], val
print(f"ok: {sys.argv[2]}: training loss at step 1 {first:.3f}; validation loss "
      f"{' -> '.join(f'{v:.3f}' for v in val)}")
PY
/usr/bin/python3 "$here/../tools/plot_plan_memory.py" "$work/demo/report.json" "$work/memory.png"
test -s "$work/memory.png"
