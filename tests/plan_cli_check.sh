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
"$expect" 2 "drop --preset and the model fields (--layers, --hidden, --heads" "$shardlab" plan --params 7e9 --heads 32
"$expect" 2 "--params: 1e30 is not in [1, 1e+15]" "$shardlab" plan --params 1e30
"$expect" 2 "--prefetch applies to ZeRO-3 only" "$shardlab" plan --preset gpt2 --zero 2 --prefetch 1
"$expect" 2 "use --compare or --sweep-ranks, not both" "$shardlab" plan --preset gpt2 --compare --sweep-ranks 1,2
"$expect" 2 "unknown GPU 'tpu'" "$shardlab" plan --preset gpt2 --gpu tpu
# Flags a mode would ignore are refused by name: --global-batch and --top are --fit's; an
# inference plan has no training step (it printed "ZeRO-0 + reproducible" for one).
"$expect" 2 "--global-batch sets the --fit search; add --fit or drop --global-batch" "$shardlab" plan --preset gpt2 -n 2 --global-batch 8
"$expect" 2 "--top sets the --fit search; add --fit or drop --top" "$shardlab" plan --preset gpt2 --top 3
"$expect" 2 "--inference plans the weights and the KV cache, no training step; drop the training flags --grad-accum, --checkpoint, --reproducible" "$shardlab" plan --preset gpt2 --inference --grad-accum 2 --checkpoint all --reproducible
"$expect" 2 "drop the training flag --no-master" "$shardlab" plan --preset gpt2 --inference --no-master

# --estimator deepspeed: DeepSpeed's rows in its print order, with the values worked out by hand in
# docs/MEMORY.md section 10 (GPT-2 124M on 1 node x 1 GPU and 2 nodes x 8), beside shardlab's.
"$shardlab" plan --preset gpt2 --estimator deepspeed --json "$work/ds1.json" >"$work/ds1.txt"
"$shardlab" plan --preset gpt2 --nodes 2 --gpus-per-node 8 --estimator deepspeed --json "$work/ds16.json" >/dev/null
test "$(grep -c 'Estimated memory needed for params, optim states and gradients' "$work/ds1.txt")" = 2
grep -qF '* shardlab has no parameter offload' "$work/ds1.txt"
/usr/bin/python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
order = [(2, "cpu", "none", False), (2, "none", "none", False), (3, "cpu", "cpu", True), (3, "cpu", "cpu", False),
         (3, "cpu", "none", True), (3, "cpu", "none", False), (3, "none", "none", True), (3, "none", "none", False)]
want = {
    "ds1.json": ([248879616, 2488796160, 154389504, 154389504, 403269120, 403269120, 2394306048, 2394306048],
                 [2986555392, 746638848, 3359874816, 3359874816, 2986555392, 2986555392, 231584256, 746638848], 1, 1),
    "ds16.json": ([248879616, 388874400, 154389504, 154389504, 169944480, 169944480, 294384288, 294384288],
                  [11946221568, 5973110784, 1679937408, 5973110784, 1493277696, 5973110784, 1852674048, 5973110784], 2, 8),
}
for name, (gpu, cpu, nodes, gpn) in want.items():
    d = json.load(open(f"{w}/{name}"))
    assert d["zero"] == 0 and d["ranks"] == nodes * gpn, name  # the plan itself is still there
    rows = d["deepspeed"]
    assert [(r["stage"], r["offload_optimizer"], r["offload_param"], r["zero_init"]) for r in rows] == order, name
    for r in rows:
        assert all(isinstance(r[k], int) and not isinstance(r[k], bool) for k in ("gpu_bytes", "cpu_bytes")), r
        s = r["shardlab"]
        assert s["zero"] == r["stage"] and s["offload"] == (r["offload_optimizer"] == "cpu") and s["param_offload"] is False
        # shardlab's side adds up: states + what DeepSpeed leaves out = its device total.
        assert s["device_states"] + s["gradient_transient"] + s["activations"] + s["buffers"] == s["device_total"], s
        assert s["host_total_per_node"] == s["host_total"] * gpn, s
    assert [r["gpu_bytes"] for r in rows] == gpu, (name, [r["gpu_bytes"] for r in rows])
    assert [r["cpu_bytes"] for r in rows] == cpu, (name, [r["cpu_bytes"] for r in rows])
    m = d["deepspeed_model"]
    assert (m["total_params"], m["largest_layer_params"], m["num_nodes"], m["num_gpus_per_node"]) == (124439808, 38597376, nodes, gpn), m
print("ok: plan --estimator deepspeed rows, values and keys")
PY
# shardlab's side is this plan's options at each stage: its ZeRO-3 rows are the plan itself here.
"$shardlab" plan --preset tiny --ranks 2 --zero 3 --prefetch 1 --micro-batch 3 --estimator deepspeed --json "$work/dst.json" >/dev/null
/usr/bin/python3 - "$work/dst.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["deepspeed"]:
    if r["stage"] == 3 and r["offload_optimizer"] == "none":
        s = r["shardlab"]
        assert (s["buffers"], s["activations"], s["device_total"]) == (d["per_rank"]["buffers"], d["per_rank"]["activations"], d["per_rank"]["device_total"]), (s, d["per_rank"])
PY
"$expect" 2 "--estimator 'zero++' is not known; use shardlab or deepspeed" "$shardlab" plan --preset gpt2 --estimator zero++
"$expect" 2 "drop --compare / --sweep-ranks" "$shardlab" plan --preset gpt2 --estimator deepspeed --compare
"$expect" 2 "--ranks 4 contradicts --nodes 2 x --gpus-per-node 4 = 8" "$shardlab" plan --preset gpt2 --ranks 4 --nodes 2 --gpus-per-node 4

# Bytes by link class: nodes of 2 ranks, declared either way, give the same split; a flat ring
# rank sends everything to rank+1, so rank 1 (edge of node 0) only across nodes, rank 0 only
# inside; without nodes, everything is intra-node.
for r in 0 1; do
  "$shardlab" plan --preset tiny --zero 3 --ranks 4 --ranks-per-node 2 --rank $r --json "$work/link$r.json" >/dev/null
done
"$shardlab" plan --preset tiny --zero 3 --nodes 2 --gpus-per-node 2 --rank 1 --json "$work/linkng.json" >/dev/null
"$shardlab" plan --preset tiny --zero 3 --ranks 4 --rank 1 --json "$work/link1node.json" >/dev/null
/usr/bin/python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
r0, r1, ng, flat = (json.load(open(f"{w}/{n}.json"))["comm"] for n in ("link0", "link1", "linkng", "link1node"))
assert r1["by_op_link"] == ng["by_op_link"], (r1, ng)
for op, b in r0["by_op"].items():
    assert r0["by_op_link"][op] == {"intra_node": b, "inter_node": 0}, (op, r0)
for op, b in r1["by_op"].items():
    assert b > 0 and r1["by_op_link"][op] == {"intra_node": 0, "inter_node": b}, (op, r1)
    assert flat["by_op_link"][op] == {"intra_node": b, "inter_node": 0}, (op, flat)
PY
# --sweep-ranks lays each N out in nodes of --ranks-per-node K (the busiest rank sends across nodes
# once there are two); it sets N itself and plans rank 0, so -n, --nodes and --rank go.
"$shardlab" plan --preset tiny --zero 3 --sweep-ranks 2,4 --ranks-per-node 2 >"$work/sweepn.txt"
grep -qE '^ +2 +3 +no .* flat +0\.000$' "$work/sweepn.txt" || { cat "$work/sweepn.txt"; exit 1; }
grep -qE '^ +4 +3 +no .* flat +0\.015$' "$work/sweepn.txt" || { cat "$work/sweepn.txt"; exit 1; }
"$expect" 2 "--sweep-ranks 6: --ranks-per-node 4 must divide the number of ranks N=6" "$shardlab" plan --preset tiny --sweep-ranks 4,6 --ranks-per-node 4
"$expect" 2 "--sweep-ranks plans rank 0 of each rank count; drop --rank" "$shardlab" plan --preset tiny --sweep-ranks 4,8 --rank 2
"$expect" 2 "--sweep-ranks sets the rank count N itself; drop --ranks / -n" "$shardlab" plan --preset tiny --sweep-ranks 4,8 -n 4
"$expect" 2 "give the node size with --ranks-per-node K instead" "$shardlab" plan --preset tiny --sweep-ranks 4,8 --nodes 2 --gpus-per-node 2
"$expect" 2 "--ranks-per-node 3 contradicts --gpus-per-node 2" "$shardlab" plan --preset tiny --nodes 2 --gpus-per-node 2 --ranks-per-node 3

# Hybrid layouts on 2 nodes x 2: --shard-group node is --shard-group 2 there; HSDP's shards are
# those of a flat run on S ranks (params, grads, optimizer); its gathers and reduce-scatters stay
# in the node and only the replica all-reduce crosses (each replica on another node); hpZ's
# re-gathers stay in the node; --compare adds HSDP at ZeRO 1-3 and hpZ after the 8 flat rows.
"$shardlab" plan --preset tiny --zero 3 --nodes 2 --gpus-per-node 2 --shard-group node --json "$work/hsdp.json" >/dev/null
"$shardlab" plan --preset tiny --zero 3 --ranks 4 --ranks-per-node 2 --shard-group 2 --json "$work/hsdp2.json" >/dev/null
"$shardlab" plan --preset tiny --zero 3 --ranks 2 --json "$work/flat2.json" >/dev/null
"$shardlab" plan --preset tiny --zero 3 --nodes 2 --gpus-per-node 2 --secondary-shard node --json "$work/hpz.json" >/dev/null
"$shardlab" plan --preset tiny --nodes 2 --gpus-per-node 2 --compare --json "$work/cmp4.json" >"$work/cmp4.txt"
/usr/bin/python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
h, h2, f2, z, cmp = (json.load(open(f"{w}/{n}.json")) for n in ("hsdp", "hsdp2", "flat2", "hpz", "cmp4"))
assert h == h2, "--shard-group node differs from --shard-group 2 on nodes of 2"
for k in ("params", "grads", "optimizer"):
    assert h["per_rank"][k] == f2["per_rank"][k], (k, h["per_rank"][k], f2["per_rank"][k])
link = h["comm"]["by_op_link"]
assert link["allgather@shard"]["inter_node"] == 0 and link["reduce_scatter@shard"]["inter_node"] == 0, link
rep = link["allreduce@replicate"]
assert rep["intra_node"] == 0 and rep["inter_node"] == h["comm"]["by_op"]["allreduce@replicate"] > 0, rep
zl = z["comm"]["by_op_link"]
assert zl["allgather@node"]["inter_node"] == 0 and zl["allgather@node"]["intra_node"] > 0, zl
assert len(cmp) == 12, len(cmp)
PY
rows=$(grep -cE ' (flat|hsdp:2|hpz:2) +[0-9.]+$' "$work/cmp4.txt")
[ "$rows" -eq 12 ] || { cat "$work/cmp4.txt"; echo "plan --compare on 2 nodes: $rows rows with a sharding"; exit 1; }
grep -qE '^ +4 +3 +no .* hpz:2 ' "$work/cmp4.txt" || { cat "$work/cmp4.txt"; echo "no hpZ row"; exit 1; }
# --compare keeps what of the given layout applies to each row: hpZ on the ZeRO-3 rows only (the
# hybrid hpZ row is then one of them, not repeated); no offload rows under --no-master (offload
# keeps an fp32 master); --inference has one layout, nothing to compare.
"$shardlab" plan --preset gpt2 --compare --zero 3 --secondary-shard node --nodes 2 --gpus-per-node 2 >"$work/cmphpz.txt"
"$shardlab" plan --preset gpt2 --compare --no-master -n 4 --json "$work/cmpnm.json" >/dev/null
/usr/bin/python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
rows = [l.split() for l in open(f"{w}/cmphpz.txt") if l.split() and l.split()[0] == "4"]
rows = [(int(r[1]), r[2], r[-2]) for r in rows]
assert rows == [(z, o, "hpz:2" if z == 3 else "flat") for z in range(4) for o in ("no", "yes")] + \
    [(z, "no", "hsdp:2") for z in (1, 2, 3)], rows
nm = json.load(open(f"{w}/cmpnm.json"))
assert [(p["zero"], p["offload"]) for p in nm] == [(z, False) for z in range(4)], nm
PY
"$expect" 2 "an --inference plan has one layout (a full replica of the weights per rank): drop --compare or --inference" "$shardlab" plan --preset gpt2 --compare --inference
"$expect" 2 "--shard-group 3 does not divide N = 4 ranks" "$shardlab" plan --preset tiny --zero 3 --ranks 4 --shard-group 3
"$expect" 2 "--shard-group node needs the nodes" "$shardlab" plan --preset tiny --zero 3 --ranks 4 --shard-group node
"$expect" 2 "--secondary-shard applies to ZeRO-3 only" "$shardlab" plan --preset tiny --zero 2 --nodes 2 --gpus-per-node 2 --secondary-shard node
echo "ok: plan with hybrid layouts"

# GQA on the GPT-2 architecture: the plan says where it is modelled, and that command runs.
"$expect" 2 "GPT-2 has one key/value head per query head" "$shardlab" plan --kv-heads 4 --heads 12
"$expect" 2 "the llama architecture: --arch llama --layers 12 --hidden 768 --heads 12 --kv-heads 4" "$shardlab" plan --kv-heads 4 --heads 12
"$shardlab" plan --arch llama --layers 12 --hidden 768 --heads 12 --kv-heads 4 --ffn 3072 --vocab 50257 --seq 1024 >/dev/null

# The --gpu verdict: none without a GPU; a bare count judged on its model states; never "fits"
# beside "largest micro-batch that fits: 0".
i=0
for model in "--params 1e12" "--params 1e9 --zero 3 --ranks 8" "--preset gpt2" "--preset 7b"; do
  for gpu in "" "--gpu h100-80" "--gpu 2e9"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    out=$("$shardlab" plan $model $gpu --json "$work/fit$i.json")
    printf '%s\n%s\n' "$model" "$gpu" >"$work/fit$i.args"
    line=$(grep -E '^(h100-80|2e9) \(' <<<"$out" || true)
    if [ -z "$gpu" ]; then
      [ -z "$line" ] || { echo "a verdict without --gpu ($model): $line"; exit 1; }
    else
      grep -qiE 'fit' <<<"$line" || { echo "no verdict with $gpu ($model)"; exit 1; }
    fi
    ! grep -qE 'that fits: 0$' <<<"$line" || { echo "contradiction ($model $gpu): $line"; exit 1; }
  done
done
/usr/bin/python3 - "$work" "$i" <<'PY'
import json, sys
for i in range(1, int(sys.argv[2]) + 1):
    d = json.load(open(f"{sys.argv[1]}/fit{i}.json"))
    model, gpu = open(f"{sys.argv[1]}/fit{i}.args").read().split("\n")[:2]
    if not gpu:  # no capacity, no verdict
        assert d["fits"] is None and d["max_micro_batch"] is None, (model, d)
    elif model.startswith("--params"):  # model states only: no micro-batch to search
        assert isinstance(d["fits"], bool) and d["max_micro_batch"] is None, (model, gpu, d)
    else:
        assert d["fits"] == (d["max_micro_batch"] >= d["micro_batch"]), (model, gpu, d)
PY
"$shardlab" plan --params 1e12 --gpu h100-80 | grep -qF "DOES NOT FIT: the model states alone exceed it"
"$shardlab" plan --params 1e9 --zero 3 --ranks 8 --gpu h100-80 | grep -qF "the model states fit (a bare parameter count"
"$shardlab" plan --preset gpt2 --gpu 2e9 | grep -qF "DOES NOT FIT, not even at micro-batch 1"
"$shardlab" plan --preset gpt2 --gpu 3e9 --zero 3 --ranks 8 --micro-batch 8 | grep -qF "DOES NOT FIT at micro-batch 8; largest micro-batch that fits: 6"
echo "ok: plan --gpu verdicts"

# --time / --profile (issue 22, docs/TIME.md sections 5-9): the breakdown's JSON, its sum, the
# collectives' bytes equal to the plan's, a two-node ring paced by its inter-node link.
"$shardlab" plan --preset gpt2 --nodes 2 --gpus-per-node 8 --zero 3 --prefetch 2 --micro-batch 4 \
  --seq 1024 --profile h100-sxm --json "$work/time.json" | grep -q "critical path: "
"$shardlab" plan --preset gpt2 --ranks 8 --compare --profile a100-sxm --json "$work/tcmp.json" >/dev/null
/usr/bin/python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
p = json.load(open(f"{w}/time.json"))
t = p["time"]
parts = t["compute_ms"] + t["exposed_comm_ms"] + t["offload_ms"]
assert abs(t["predicted_step_ms"] - parts) <= 1e-9 * parts, (t["predicted_step_ms"], parts)
assert abs(t["compute_ms"] - (t["forward_ms"] + t["backward_ms"] + t["recompute_ms"] + t["optimizer_ms"])) <= 1e-9 * parts
by_op = {c["op"]: c for c in t["collectives"]}
for op, c in by_op.items():
    assert c["bytes"] == p["comm"]["by_op"][op], op
assert by_op["allgather"]["link"] == "inter_node" and by_op["reduce_scatter"]["link"] == "inter_node"
for c in by_op.values():  # the pace is the slowest class: its time is the collective's
    assert set(c["ms_by_link"]) == {"intra_node", "inter_node"}, c
    assert c["ms_by_link"][c["link"]] == max(c["ms_by_link"].values())
    assert abs(c["ms_by_link"][c["link"]] - c["ms"]) <= 1e-9 * c["ms"]
tokens = 16 * 4 * 1024
assert abs(t["tokens_per_s"] - tokens / (t["predicted_step_ms"] / 1e3)) <= 1e-6 * t["tokens_per_s"]
cmp = json.load(open(f"{w}/tcmp.json"))
assert all("time" in c and c["time"]["predicted_step_ms"] > 0 for c in cmp)
print("ok: plan --time JSON, its sums, the plan's bytes, the inter-node pace")
PY
# Bad input is refused before the plan is printed: nothing on stdout, exit 2 (a usage error: no
# "rank 0:" for an unwritable --json).
refused_first() {
  local want=$1 out
  shift
  "$expect" 2 "$want" "$@"
  if out=$("$@" 2>/dev/null); then echo "expected a failure: $*"; exit 1; fi
  [ -z "$out" ] || { echo "printed before refusing ($*):"; echo "$out"; exit 1; }
}
refused_first "--time needs rates: give --profile FILE" "$shardlab" plan --preset gpt2 --time
refused_first "unknown profile 'nosuch': not a built-in" "$shardlab" plan --preset gpt2 --compare --profile nosuch
refused_first "--time predicts a training step; drop --inference" "$shardlab" plan --preset gpt2 --inference --profile h100-sxm
refused_first "shardlab: error: --json $work/one.json/p.json: $work/one.json is not a directory" "$shardlab" plan --preset gpt2 --json "$work/one.json/p.json"
refused_first "shardlab: error: --json /proc/p.json: cannot write in /proc" "$shardlab" plan --preset gpt2 --json /proc/p.json
refused_first "--json $work is a directory; give a file name" "$shardlab" plan --preset gpt2 --json "$work"
"$expect" 2 "the time model needs the model's shape" "$shardlab" plan --params 7e9 --profile h100-sxm
# A Llama has its own kernel counts (section 5.2): a preset gets a prediction; --fit over a Llama's
# fields ranks by it and prints a train command naming the family and its own widths.
"$shardlab" plan --preset 7b -n 8 --profile h100-sxm | grep -q "critical path: "
"$shardlab" plan --arch llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 160 --vocab 256 \
  --seq 64 -n 2 --gpu 30e6 --global-batch 8 --profile h100-sxm --fit --top 1 |
  grep -q "shardlab train --arch llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 160 "
"$expect" 2 "llama runs flash attention only" "$shardlab" plan --preset tiny-llama --attention materialize --profile h100-sxm
# ... and without the time model: the memory plan's activations would be flash's under a
# "materialize" header.
"$expect" 2 "llama runs flash attention only" "$shardlab" plan --preset tiny-llama --attention materialize

# --fit (docs/TIME.md section 12): what fits the budget, ranked, with the train command that runs
# it; nothing fits: exit 1 naming the smallest; the flags it needs.
"$shardlab" plan --preset tiny -n 2 --gpu 30e6 --global-batch 16 --profile h100-sxm --fit --top 3 \
  --json "$work/fit.json" | grep -q "^#1 "
/usr/bin/python3 - "$work" <<'PY'
import json, sys
f = json.load(open(f"{sys.argv[1]}/fit.json"))["fit"]
assert f["budget_bytes"] == 30000000 and f["fitting"] > 0 and 1 <= len(f["ranked"]) <= 3, f
speeds = [c["time"]["tokens_per_s"] for c in f["ranked"]]
assert speeds == sorted(speeds, reverse=True), speeds
for c in f["ranked"] + [t for c in f["ranked"] for t in c["ties"]]:
    assert c.get("per_rank", {"device_total": c.get("device_total")})["device_total"] <= 30000000, c
    assert c["train_command"].startswith("mpirun -np 2 shardlab train --preset tiny"), c["train_command"]
for c in f["ranked"]:
    mb, ga = c["micro_batch"], int(c["train_command"].split("--grad-accum ")[1].split()[0])
    assert mb * ga * 2 == 16, (mb, ga)
print("ok: plan --fit JSON")
PY
"$expect" 1 "nothing fits in 4000000 B" "$shardlab" plan --preset tiny -n 2 --gpu 4e6 --profile h100-sxm --fit
"$expect" 2 "--fit needs a rank's memory" "$shardlab" plan --preset tiny -n 2 --profile h100-sxm --fit
"$expect" 2 "--fit ranks by predicted speed" "$shardlab" plan --preset tiny -n 2 --gpu 1e9 --fit
"$expect" 2 "--global-batch 7 does not divide over N = 2 ranks" "$shardlab" plan --preset tiny -n 2 --gpu 1e9 --profile h100-sxm --global-batch 7 --fit

# --gemm: OpenBLAS's workspace is predicted (16-bit operands widened), cuBLAS's is not.
"$shardlab" plan --preset tiny --gemm openblas --json "$work/ws.json" | grep -q "workspace (not in total)"
"$shardlab" plan --preset tiny --gemm cublas --json "$work/ws2.json" >/dev/null
/usr/bin/python3 - "$work" <<'PY'
import json, sys
a = json.load(open(f"{sys.argv[1]}/ws.json"))["per_rank"]
b = json.load(open(f"{sys.argv[1]}/ws2.json"))["per_rank"]
assert a["workspace"] > 0 and b["workspace"] is None and a["device_total"] == b["device_total"], (a, b)
print("ok: plan --gemm workspace")
PY
"$expect" 2 "--gemm mkl is not a GEMM library" "$shardlab" plan --preset tiny --gemm mkl
