#!/usr/bin/env bash
# Hybrid sharding over a shaped link (issue 21), docs/BENCHMARKS.md: two real "nodes" (network
# namespaces, tests/two_node_net.sh), 2 ranks each, Open MPI over TCP, the link between them
# shaped by tc to RATE (netem with DELAY where the kernel has it, else tbf: rate only). The same
# training four ways, one after the other in one run: ZeRO-0, flat ZeRO-3, ZeRO-3 sharded in the
# node (--shard-group node: HSDP) and ZeRO-3 with a node-local secondary shard (hpZ). For each: the
# median step time, the inter-node bytes the report predicts and measured, and what the link's
# own counters saw. Writes bench/results/hybrid_tc_RATE.jsonl, the table (tools/compare_runs.py)
# and bench/results/hybrid_tc_RATE.png (bytes by link class per rank). Needs root. 25 s at 1gbit
# on a 2-vCPU machine, 1 min at 200mbit.
# Usage: bench/hybrid_tc.sh [SHARDLAB] [--rate 1gbit] [--delay 1ms] [--steps 8]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
here=$repo/tests
shardlab=build/shardlab rate=1gbit delay=1ms steps=8
while (($#)); do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "hybrid_tc: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) shardlab=$1; shift ;;
  esac
done
shardlab=$(realpath "$shardlab")
mpirun=(mpirun --oversubscribe --bind-to none --allow-run-as-root)
skip() { echo "hybrid_tc: cannot run here: $*" >&2; exit 77; }
fail() { echo "hybrid_tc: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "network namespaces and tc need root"
command -v tc >/dev/null || skip "no 'tc' (Debian package iproute2)"
# shellcheck source=tests/two_node_net.sh
. "$here/two_node_net.sh"

# Each direction between the nodes leaves through one eth0 (A's or B's): shape both egresses.
shaping=
for ns in "$ns_a" "$ns_b"; do
  if ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "$delay" rate "$rate" 2>/dev/null; then
    shaping="netem: $rate, $delay each way"
  else # this kernel has no netem: a token bucket, the rate alone
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 200ms ||
      skip "tc could not shape eth0 (neither netem nor tbf)"
    shaping="tbf: $rate, no added delay (this kernel has no netem)"
  fi
done
echo "link between the nodes: $shaping; $(nproc) cores for 4 ranks"

# 4.2M parameters (8.4 MB of bf16 weights): enough bytes that the link matters next to the compute.
model=(--layers 4 --hidden 256 --heads 4 --seq 64 --vocab 4096 --micro-batch 2 --threads 1
  --steps "$steps" --quiet)
results=$repo/bench/results
mkdir -p "$results"
jsonl=$results/hybrid_tc_$rate.jsonl
: >"$jsonl"
runs=()
for way in "zero0:--zero 0" "zero3:--zero 3" "hsdp:--zero 3 --shard-group node" \
  "hpz:--zero 3 --secondary-shard node"; do
  name=${way%%:*}
  read -r -a flags <<<"${way#*:}"
  echo "$name: ${flags[*]} ..."
  before=$(link_bytes)
  t0=$(date +%s.%N)
  two_nodes 600 "${model[@]}" "${flags[@]}" --out "$work/$name" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "$name: the run failed"; }
  t1=$(date +%s.%N)
  after=$(link_bytes)
  runs+=("$work/$name")
  /usr/bin/python3 - "$work/$name" "$name" "$before" "$after" "$t0" "$t1" "$shaping" >>"$jsonl" <<'PY'
import json, statistics, sys
run, name, before, after, t0, t1, shaping = sys.argv[1:]
r = json.load(open(run + "/report.json"))
(rx0, tx0), (rx1, tx1) = (map(int, s.split()) for s in (before, after))
steps = [s["ms"] for s in r["steps"]]
inter = sum(o["bytes_by_link"]["inter_node"] for k in r["ranks"] for o in k["comm"].values())
pred = sum(o["predicted_bytes_by_link"]["inter_node"] for k in r["ranks"] for o in k["comm"].values())
print(json.dumps({
    "config": name, "link": shaping, "node_layout": r["node_layout"], "steps": len(steps),
    # the first step also connects Open MPI's TCP links: left out of the median
    "median_step_ms": statistics.median(steps[1:]),
    "exposed_comm_ms": max(x["time"]["median_exposed_comm_ms"] for x in r["ranks"]),
    "inter_node_bytes": inter, "predicted_inter_node_bytes": pred,
    "link_counted_bytes": (rx1 - rx0) + (tx1 - tx0), "wall_s": float(t1) - float(t0),
    "final_params_sha256": r["final_params_sha256"]}))
PY
done
/usr/bin/python3 "$repo/tools/compare_runs.py" "${runs[@]}" --png "$results/hybrid_tc_$rate.png"
/usr/bin/python3 - "$jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\n{rows[0]['link']}, {rows[0]['node_layout']}, {rows[0]['steps']} steps")
print(f"{'config':<8} {'median step ms':>15} {'exposed comm ms':>16} {'inter-node MB (run)':>20} "
      f"{'predicted':>10} {'link counted':>13}")
for r in rows:
    print(f"{r['config']:<8} {r['median_step_ms']:>15.1f} {r['exposed_comm_ms']:>16.1f} "
          f"{r['inter_node_bytes'] / 1e6:>20.2f} {r['predicted_inter_node_bytes'] / 1e6:>10.2f} "
          f"{r['link_counted_bytes'] / 1e6:>13.2f}")
print("(link counted: both directions of B's link over the whole run, startup, validation and the"
      " final gathers included)")
PY
