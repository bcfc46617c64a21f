#!/usr/bin/env bash
# mpirun on one machine with the flags small machines need: running as root in containers
# (--allow-run-as-root), the shared-memory copy path that works in sandboxes, and core binding:
# when the ranks fit on the cores, each rank gets its own nproc/np cores (--map-by slot:PE=k
# --bind-to core; shardlab then runs k threads per rank, its default), so two ranks never share a
# core and one rank's threads never share one either. More ranks than cores: --oversubscribe,
# unbound. Usage: launch/mpirun_local.sh -np 4 CMD...
set -euo pipefail
np=1
for ((i = 1; i <= $#; i++)); do
  case "${!i}" in -np | -n) j=$((i + 1)); np=${!j} ;; esac
done
cores=$(nproc)
if ((np <= cores)); then
  flags=(--map-by "slot:PE=$((cores / np))" --bind-to core)
else
  flags=(--oversubscribe --bind-to none)
fi
[ "$(id -u)" -ne 0 ] || flags+=(--allow-run-as-root)
# Every rank's output goes through a pseudo-terminal of Open MPI's, so only here is it known whether
# it reaches a terminal: shardlab train then draws its status line (launch/progress.cpp).
if [ -t 1 ]; then export SHARDLAB_TERMINAL=${SHARDLAB_TERMINAL:-1}; flags+=(-x SHARDLAB_TERMINAL); fi
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
exec mpirun "${flags[@]}" "$@"
