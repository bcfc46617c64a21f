#!/usr/bin/env bash
# mpirun on one machine with the flags small machines need: more ranks than cores
# (--oversubscribe, no core binding), running as root in containers (--allow-run-as-root), and
# the shared-memory copy path that works in sandboxes. Usage: launch/mpirun_local.sh -np 4 CMD...
set -euo pipefail
flags=(--oversubscribe --bind-to none)
[ "$(id -u)" -ne 0 ] || flags+=(--allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
exec mpirun "${flags[@]}" "$@"
