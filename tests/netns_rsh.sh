#!/usr/bin/env bash
# Open MPI's remote-shell agent for "nodes" that are network namespaces on this machine (the
# two-node test, tests/two_node_check.sh). Open MPI calls its agent as ssh: `AGENT [OPTIONS] HOST
# COMMAND...`, COMMAND being one shell line (orted and its arguments). This agent runs that line in
# HOST's namespace instead of on another machine: `ip netns exec NS /bin/sh -c COMMAND`, in a UTS
# namespace of its own whose host name is NS. Needs root.
#   SHARDLAB_NETNS_HOSTS="10.213.0.1=ns-a,10.213.0.2=ns-b"   host (as in the hostfile) = namespace
# The host names matter: Open MPI names its session directory (TMPDIR/ompi.HOSTNAME.UID) after the
# node, so two daemons that share a file system and a host name share one directory, and race in
# it (mkdir "File exists", a segfault writing the shared hwloc topology): one in ten launches.
# Use: mpirun --hostfile H --mca plm_rsh_agent tests/netns_rsh.sh --mca plm_rsh_no_tree_spawn 1 ...
set -euo pipefail
# ssh's options: those taking a value (as the next word or attached), then flags. Open MPI passes
# none to an agent it does not know, but a user's plm_rsh_args may.
while (($#)); do
  case $1 in
    -[BbcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    --) shift; break ;;
    -?*) shift ;;
    *) break ;;
  esac
done
(($# >= 2)) || { echo "netns_rsh: usage: netns_rsh.sh [OPTIONS] HOST COMMAND..." >&2; exit 255; }
host=${1#*@} # user@host: the user is ignored (root runs everything)
shift
ns=
IFS=', ' read -r -a pairs <<<"${SHARDLAB_NETNS_HOSTS:-}"
for pair in "${pairs[@]}"; do
  [ "${pair%%=*}" != "$host" ] || ns=${pair#*=}
done
[ -n "$ns" ] || { echo "netns_rsh: no namespace for host '$host' in SHARDLAB_NETNS_HOSTS='${SHARDLAB_NETNS_HOSTS:-}'" >&2; exit 255; }
# As ssh does: the words joined by spaces, run by a shell on the "remote" side.
# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$1" && exec /bin/sh -c "$2"' sh "$ns" "$*"
