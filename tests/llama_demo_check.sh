#!/usr/bin/env bash
# examples/llama_demo.toml, shortened to 120 steps on 2 ranks: on the default corpus the Llama's
# validation loss must fall clearly — from ~5.5 nats per byte (ln 256, untrained) to below 3.0 —
# and the sample must be there.
set -euo pipefail
shardlab=$1
shift
mpirun=("$@")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${mpirun[@]}" -np 2 "$shardlab" train --config "$here/../examples/llama_demo.toml" --steps 120 \
  --val-every 40 --sample 40 --out "$work/demo" > "$work/log.txt"
grep -q "^sample (40 tokens" "$work/log.txt"
/usr/bin/python3 - "$work/demo/report.json" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
first, val = steps[0]["loss"], [s["val_loss"] for s in steps if "val_loss" in s]
assert first > 5.0, first
assert val[-1] < 3.0 and val[-1] < val[0], val
print(f"ok: Llama training loss at step 1 {first:.3f}; validation loss {' -> '.join(f'{v:.3f}' for v in val)}")
PY
