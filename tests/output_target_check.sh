#!/usr/bin/env bash
# Outputs named through symbolic links, as a pipe, or as the run's own files, from the command
# line: every writer (safetensors, a streamed --save-weights, JSON: --trace, plan --json) replaces
# the file a link names and keeps the link; a pipe (/dev/stdout into `|`) receives the bytes and
# stays a pipe; --trace or --save-weights naming the run's log or checkpoint is refused; a trace
# that cannot be written is recorded in report.json.
# Usage: output_target_check.sh SHARDLAB
set -euo pipefail
shardlab=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
small=(--layers 1 --hidden 32 --heads 2 --seq 16)
mkdir store
echo old > store/init.safetensors
echo old > store/w.safetensors
echo old > store/trace.json
echo old > store/plan.json
ln -s store/init.safetensors init.safetensors
ln -s store/w.safetensors w.safetensors
ln -s "$work/store/trace.json" trace.json # absolute
ln -s store/plan.json plan.json
"$shardlab" init "${small[@]}" --out init.safetensors >/dev/null
"$shardlab" train "${small[@]}" --steps 2 --quiet --out run --trace trace.json --save-weights w.safetensors >/dev/null
"$shardlab" plan --preset tiny --json plan.json >/dev/null
for f in init w trace plan; do
  ext=safetensors && [ $f = trace ] || [ $f = plan ] && ext=json
  [ -L $f.$ext ] || fail "$f.$ext is no longer a link"
  echo old | cmp -s - store/$f.$ext && fail "store/$f.$ext was not written through its link"
  [ ! -e store/$f.$ext.tmp ] && [ ! -e $f.$ext.tmp ] || fail "a temporary of $f.$ext is left"
done
python3 -c 'import json, sys; [json.load(open(f)) for f in sys.argv[1:]]' trace.json plan.json
# Into a pipe through /dev/stdout (a link to /proc/self/fd/1, which leads to "pipe:[N]").
"$shardlab" plan --preset tiny --json /dev/stdout 2>/dev/null | python3 -c 'import json, sys
text = sys.stdin.read()
json.JSONDecoder().raw_decode(text)' || fail "plan --json /dev/stdout did not give JSON on the pipe"
# A pipe where a safetensors file is written at offsets: refused, and still a pipe.
mkfifo pipe
cat pipe > /dev/null &
set +e
out=$("$shardlab" init "${small[@]}" --out pipe 2>&1)
rc=$?
set -e
wait
[ -p pipe ] || fail "the pipe was replaced"
[ $rc != 0 ] && grep -q "it is a pipe, and the file is written at offsets" <<< "$out" ||
  fail "init --out pipe: exit $rc, $out"
# The run's own files.
for bad in "--trace run2/steps.jsonl:steps.jsonl" "--trace run2/report.json:report.json" \
  "--save-weights run2/checkpoint/w.safetensors:checkpoint"; do
  set +e
  out=$("$shardlab" train "${small[@]}" --steps 2 --quiet --out run2 ${bad%%:*} 2>&1)
  rc=$?
  set -e
  [ $rc = 2 ] && grep -q "is the run's own ${bad##*:} (in --out run2), which the run writes" <<< "$out" ||
    fail "${bad%%:*}: exit $rc, $out"
done
# A trace that cannot be written (a full device) costs the trace alone, and report.json says so.
"$shardlab" train "${small[@]}" --steps 2 --quiet --out run3 --trace /dev/full >/dev/null 2>&1 ||
  fail "--trace /dev/full ended the run"
python3 -c 'import json, sys; e = json.load(open(sys.argv[1])).get("trace_error", "")
assert "disk is full" in e, e' run3/report.json || fail "report.json does not record the lost trace"
[ -c /dev/full ] || fail "/dev/full is no longer a device"
echo "output_target_check: ok"
