#!/usr/bin/env bash
# `shardlab plan` end to end: the JSON keys tools rely on, --compare / --sweep-ranks lists, the
# plot script, and bad input.
set -euo pipefail
shardlab=$1 expect=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$shardlab" plan --preset gpt2 --ranks 8 --zero 3 --offload --gpu h100-80 --json "$work/one.json" >/dev/null
"$shardlab" plan --preset gpt2 --ranks 8 --compare --json "$work/compare.json" >/dev/null
"$shardlab" plan --params 7.5e9 --sweep-ranks 1,4,16,64 --zero 3 --json "$work/sweep.json" >/dev/null
/usr/bin/python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
one = json.load(open(f"{w}/one.json"))
for k in ["params", "grads", "master", "optimizer", "activations", "buffers", "kv_cache", "device_total", "host_total"]:
    assert isinstance(one["per_rank"][k], int), k
assert set(one["comm"]) >= {"bytes_per_step", "by_op"} and isinstance(one["comm"]["by_op"], dict)
assert isinstance(one["host_device_bytes_per_step"], int) and one["host_device_bytes_per_step"] > 0
assert one["fits"] is True and one["max_micro_batch"] >= 1
cmp = json.load(open(f"{w}/compare.json"))
assert [(p["zero"], p["offload"]) for p in cmp] == [(z, o) for z in range(4) for o in (False, True)]
assert all(p["ranks"] == 8 for p in cmp)
sweep = json.load(open(f"{w}/sweep.json"))
totals = [p["per_rank"]["device_total"] for p in sweep]
assert [p["ranks"] for p in sweep] == [1, 4, 16, 64] and totals == sorted(totals, reverse=True), totals
assert totals[-1] == 1875000000, totals  # 16 Psi / 64
print("ok: plan JSON keys, compare and sweep lists")
PY
/usr/bin/python3 "$here/../tools/plot_plan_memory.py" "$work/compare.json" "$work/compare.png"
test -s "$work/compare.png"
"$shardlab" plan --preset gpt2 --inference --json "$work/inf.json" >/dev/null
"$expect" 2 "unknown preset 'gpt9'" "$shardlab" plan --preset gpt9
"$expect" 2 "kv-heads 3 does not divide heads 32" "$shardlab" plan --preset 7b --kv-heads 3
"$expect" 2 "--zero 4 is not a ZeRO stage" "$shardlab" plan --preset gpt2 --zero 4
"$expect" 2 "--params describes the model by its size alone" "$shardlab" plan --params 7e9 --preset gpt2
"$expect" 2 "--params: 1e30 is not in [1, 1e+15]" "$shardlab" plan --params 1e30
"$expect" 2 "--prefetch applies to ZeRO-3 only" "$shardlab" plan --preset gpt2 --zero 2 --prefetch 1
"$expect" 2 "use --compare or --sweep-ranks, not both" "$shardlab" plan --preset gpt2 --compare --sweep-ranks 1,2
"$expect" 2 "unknown GPU 'tpu'" "$shardlab" plan --preset gpt2 --gpu tpu
