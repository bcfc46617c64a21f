#!/usr/bin/env bash
# `shardlab report` and `shardlab plan --plot` end to end: a tiny 2-rank run with validation, as 2
# nodes of 1 rank (--ranks-per-node 1), gives one PNG per plot (the PNG signature, not a stub;
# links.png: bytes by link class) and a summary.md embedding each, with the per-link table marked
# "=" as train's own table is; bad input —
# no directory, no report.json, corrupt JSON, a --plot name that is not a PNG, a missing
# directory — exits 2 naming the fix. Usage: report_check.sh SHARDLAB EXPECT MPIRUN...
set -euo pipefail
shardlab=$1 expect=$2
shift 2
mpirun=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${mpirun[@]}" -np 2 "$shardlab" train --layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 \
  --steps 4 --val-every 2 --val-batches 1 --zero 3 --ranks-per-node 1 --quiet --out "$work/run" \
  --profile h100-sxm > "$work/train.txt"
# train --profile (issue 22, docs/TIME.md): the prediction beside the measurement, in report.json,
# in train's table and in summary.md (below).
grep -qE '^rank 1 predicted / measured \(median, profile h100-sxm\): step [0-9.]+ / [0-9.]+ ms' "$work/train.txt" ||
  { cat "$work/train.txt"; exit 1; }
/usr/bin/python3 - "$work/run/report.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["ranks"]:
    t = r["time"]
    p, vs = t["predicted"], t["vs"]
    assert t["predicted_step_ms"] == p["predicted_step_ms"] > 0
    parts = p["compute_ms"] + p["exposed_comm_ms"] + p["offload_ms"]
    assert abs(parts - p["predicted_step_ms"]) <= 1e-9 * parts
    assert vs["step"]["measured_ms"] == t["median_step_ms"]
    assert vs["exposed_comm"]["measured_ms"] == t["median_exposed_comm_ms"]
    assert vs["missed_most"] in ("compute", "exposed_comm")
    assert {c["link"] for c in p["collectives"]} == {"inter_node"}  # 2 nodes of 1 rank
print("ok: train --profile's prediction in report.json")
PY
"$shardlab" report "$work/run" > "$work/report.txt"
# The summary's path is the last line.
[ "$(tail -n 1 "$work/report.txt")" = "summary: $work/run/summary.md" ] || { cat "$work/report.txt"; exit 1; }
is_png() { # the 8-byte PNG signature and more than a few KB: a drawn plot, not an empty file
  head -c 8 "$1" | od -An -tx1 | grep -q "89 50 4e 47 0d 0a 1a 0a" || { echo "$1: not a PNG"; exit 1; }
  [ "$(stat -c %s "$1")" -gt 10000 ] || { echo "$1: only $(stat -c %s "$1") bytes"; exit 1; }
}
for plot in loss memory phases comm time links; do
  is_png "$work/run/$plot.png"
  grep -qF "]($plot.png)" "$work/run/summary.md" || { echo "summary.md does not embed $plot.png"; exit 1; }
done
grep -qF "Step time predicted by the time model (profile h100-sxm)" "$work/run/summary.md" ||
  { echo "summary.md lacks the time model's table"; exit 1; }
[ "$(ls "$work/run"/*.png | wc -l)" -eq 6 ] || { ls "$work/run"; exit 1; }
# Every collective's bytes per link class marked equal to the model's, in summary.md (both ranks
# send across the 2 nodes, nothing inside) and in train's own table.
grep -qE '^\| 1 \| allgather \| 0 \| 0 \| = \| [1-9][0-9]* \| [1-9][0-9]* \| = \|$' "$work/run/summary.md" ||
  { cat "$work/run/summary.md"; exit 1; }
if grep -q '≠' "$work/run/summary.md" "$work/train.txt"; then cat "$work/run/summary.md" "$work/train.txt"; exit 1; fi
[ "$(grep -cE '^    inter_node +[1-9][0-9]* +[1-9][0-9]* +=$' "$work/train.txt")" -ge 4 ] || { cat "$work/train.txt"; exit 1; }
grep -qF "| steps run | 4 |" "$work/run/summary.md" || { cat "$work/run/summary.md"; exit 1; }
grep -qE "^\| validation loss \| [0-9.]+ at step 2 -> [0-9.]+ at step 4 \|$" "$work/run/summary.md"
echo "ok: 6 PNGs and summary.md, bytes by link class = the model's"
# --out elsewhere, and the script on its own.
"$shardlab" report "$work/run" --out "$work/elsewhere" > /dev/null
is_png "$work/elsewhere/comm.png"
/usr/bin/python3 "$(dirname "$0")/../tools/report.py" "$work/run" --out "$work/alone" > /dev/null
test -s "$work/alone/summary.md"
grep -q "^GPT-2 with 1 layers, hidden 32, 2 heads, vocabulary" "$work/alone/summary.md" || { head -5 "$work/alone/summary.md"; exit 1; }
# The summary names the run's family: the same report as a Llama's (grouped-query) says so.
cp -r "$work/run" "$work/llama"
/usr/bin/python3 - "$work/llama/report.json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
rep["config"]["model"].update(arch="llama", kv_heads=1)
json.dump(rep, open(sys.argv[1], "w"))
PY
/usr/bin/python3 "$(dirname "$0")/../tools/report.py" "$work/llama" --out "$work/llama" > /dev/null
grep -q "^Llama with 1 layers, hidden 32, 2 heads (1 key/value), vocabulary" "$work/llama/summary.md" &&
  ! grep -q "GPT-2" "$work/llama/summary.md" || { head -5 "$work/llama/summary.md"; exit 1; }

"$expect" 2 "run \`shardlab train --out $work/nothing\` first" "$shardlab" report "$work/nothing"
mkdir "$work/empty"
"$expect" 2 "has no report.json" "$shardlab" report "$work/empty"
mkdir "$work/corrupt" && head -c 100 "$work/run/report.json" > "$work/corrupt/report.json"
"$expect" 2 "report.json is not valid JSON" "$shardlab" report "$work/corrupt"
echo '{"steps": []}' > "$work/corrupt/report.json"
"$expect" 2 "is not a shardlab training report" "$shardlab" report "$work/corrupt"
"$expect" 2 "is matplotlib installed for it" "$shardlab" report "$work/run" --python /bin/false

"$shardlab" plan --preset tiny --ranks 2 --zero 3 --offload --plot "$work/one.png" > /dev/null
"$shardlab" plan --preset gpt2 --ranks 8 --compare --plot "$work/compare.png" > /dev/null
is_png "$work/one.png"
is_png "$work/compare.png"
"$expect" 2 "give a file name ending in .png" "$shardlab" plan --preset tiny --plot "$work/x.jpg"
"$expect" 2 "is not a directory; create it" "$shardlab" plan --preset tiny --plot "$work/no/x.png"
echo "report and plan --plot: ok"
