# shellcheck shell=bash disable=SC2154 # here, shardlab, mpirun, skip, fail: the caller's
# Two "nodes" on one machine, for tests/two_node_check.sh and bench/hybrid_tc.sh (sourced, not
# run): two network namespaces A and B joined by a bridge in a third, sw, which runs mpirun; each
# namespace is a host of its own to Open MPI (tests/netns_rsh.sh starts its daemons there).
# Nothing on the host's own network changes: every link and address lives in namespaces made here
# (names with the caller's PID in them), and the EXIT trap kills what runs in them and deletes
# them, on failure too. The caller defines `here` (tests/), `shardlab`, `mpirun` (an array),
# `skip` and `fail` first, and needs root. Provides `two_nodes SECONDS TRAIN-ARGS...` (4 ranks,
# 2 a node, over TCP), `link_bytes`, `$work` (removed on exit) and the names below.
agent=$here/netns_rsh.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # whatever MPIRUN's flags say
subnet=10.213.0.0/24 ip_a=10.213.0.1 ip_b=10.213.0.2 ip_sw=10.213.0.254
ns_sw=shardlab2n-$$-sw ns_a=shardlab2n-$$-a ns_b=shardlab2n-$$-b
made=()      # namespaces created so far, deleted on exit
work=$(mktemp -d /tmp/shardlab-two-node.XXXXXX)

in_namespaces() { for ns in "${made[@]}"; do ip netns pids "$ns" 2>/dev/null || true; done; }
cleanup() {
  local rc=$? ns pids i
  trap - EXIT INT TERM
  # Everything in these namespaces was started by this script (mpirun, orted, the ranks): continue
  # a stopped rank, ask all to end, then kill what is left after 3 s.
  pids=$(in_namespaces)
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -CONT $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for ((i = 0; i < 30; i++)); do
      [ -n "$(in_namespaces)" ] || break
      sleep 0.1
    done
    pids=$(in_namespaces)
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  fi
  for ns in "${made[@]}"; do
    ip netns del "$ns" 2>/dev/null || echo "warning: could not delete network namespace $ns"
  done
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the network: A and B each have eth0, the peer of a veth whose other end is on the bridge br0
# in namespace sw; 10.213.0.0/24 exists only inside these namespaces.
err=$work/ip.err
ip netns add "$ns_sw" 2>"$err" || skip "cannot create a network namespace: $(cat "$err")"
made+=("$ns_sw")
for ns in "$ns_a" "$ns_b"; do
  ip netns add "$ns"
  made+=("$ns")
done
ip -n "$ns_sw" link add br0 type bridge 2>"$err" || skip "cannot create a bridge in a namespace: $(cat "$err")"
ip -n "$ns_sw" link add va type veth peer name eth0 netns "$ns_a" 2>"$err" ||
  skip "cannot create a veth pair between namespaces: $(cat "$err")"
ip -n "$ns_sw" link add vb type veth peer name eth0 netns "$ns_b"
for ns in "$ns_sw" "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_sw" link set va master br0
ip -n "$ns_sw" link set vb master br0
ip -n "$ns_sw" addr add "$ip_sw/24" dev br0
ip -n "$ns_a" addr add "$ip_a/24" dev eth0
ip -n "$ns_b" addr add "$ip_b/24" dev eth0
for l in br0 va vb; do ip -n "$ns_sw" link set "$l" up; done
ip -n "$ns_a" link set eth0 up
ip -n "$ns_b" link set eth0 up
echo "network: $ns_a ($ip_a) and $ns_b ($ip_b) bridged in $ns_sw ($ip_sw)"

# The hostfile is launch/hostfile.example, as users copy it: host line i names namespace i's
# address, every slots= count becomes 2 (comments and blank lines stay; mpirun skips them).
example=$here/../launch/hostfile.example
awk -v a="$ip_a" -v b="$ip_b" '
  /^[ \t]*(#|$)/ { print; next }
  { n++; $1 = (n == 1 ? a : n == 2 ? b : "MORE-THAN-TWO-HOSTS"); gsub(/slots=[0-9]+/, "slots=2"); print }
  END { if (n != 2) exit 1 }' "$example" >"$work/hostfile" ||
  fail "$example must name exactly two hosts, one \"HOST slots=K\" line each"
{ grep -q "^$ip_a slots=2\$" "$work/hostfile" && grep -q "^$ip_b slots=2\$" "$work/hostfile"; } ||
  fail "$example: host lines are not \"HOST slots=K\": $(grep -v '^#' "$work/hostfile" | paste -sd' ')"
mkdir "$work/tmp"
# Each rank records where it runs, then becomes shardlab.
cat >"$work/rank.sh" <<EOF
#!/bin/sh
echo "rank \$OMPI_COMM_WORLD_RANK netns \$(ip netns identify) local_size \$OMPI_COMM_WORLD_LOCAL_SIZE host \$(hostname)" >"$work/where.\$OMPI_COMM_WORLD_RANK"
exec "\$@"
EOF
chmod +x "$work/rank.sh"

# mpirun in namespace sw: both nodes are remote to it, each started through the agent. Each of
# the three has a host name of its own (netns_rsh.sh says why); Open MPI's session directories go
# to $work/tmp, removed on exit even after a kill.
# Usage: two_nodes SECONDS TRAIN-ARGS... (mpirun killed after SECONDS).
two_nodes() {
  local limit=$1
  shift
  # shellcheck disable=SC2016 # $1 and $@ are the inner shell's
  env -u OMPI_MCA_btl -u OMPI_MCA_btl_vader_single_copy_mechanism \
    SHARDLAB_NETNS_HOSTS="$ip_a=$ns_a,$ip_b=$ns_b" TMPDIR="$work/tmp" \
    ip netns exec "$ns_sw" unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' sh "$ns_sw" \
    timeout "$limit" "${mpirun[@]}" --hostfile "$work/hostfile" -np 4 \
    --mca plm_rsh_agent "$agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl tcp,self --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet" \
    "$work/rank.sh" "$shardlab" train "$@"
}
link_bytes() { # bytes through vb (B's link to the bridge): received from B, sent to B
  ip netns exec "$ns_sw" cat /sys/class/net/vb/statistics/rx_bytes /sys/class/net/vb/statistics/tx_bytes | paste -sd' '
}
