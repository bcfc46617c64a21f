#!/usr/bin/env bash
# A checkpoint written before the model config recorded its architecture ("arch", issue 25)
# resumes: the model is GPT-2 and matches this run's. Usage: old_checkpoint_check.sh SHARDLAB
set -euo pipefail
shardlab=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=(--layers 2 --hidden 64 --heads 4 --seq 32 --steps 4 --precision fp32 --threads 1 --quiet)
"$shardlab" train "${model[@]}" --stop-after 2 --out "$work/run" >/dev/null
/usr/bin/python3 - "$work/run/checkpoint/meta.json" <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
assert m["config"]["model"].pop("arch") == "gpt2"
json.dump(m, open(p, "w"), indent=2)
PY
out=$("$shardlab" train "${model[@]}" --out "$work/run2" --resume "$work/run" 2>&1)
grep -qF "resumed from '$work/run/checkpoint' at step 2" <<<"$out" || { echo "$out"; exit 1; }
echo "ok: a checkpoint without \"arch\" resumes as GPT-2"
