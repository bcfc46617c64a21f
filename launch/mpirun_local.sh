#!/usr/bin/env bash
# mpirun on one machine with the flags small machines need: running as root in containers
# (--allow-run-as-root), the shared-memory copy path that works in sandboxes, and core binding:
# when the ranks fit on the cores, each rank gets its own nproc/np cores (--map-by slot:PE=k
# --bind-to core; shardlab then runs k threads per rank, its default), so two ranks never share a
# core and one rank's threads never share one either. More ranks than cores: --oversubscribe,
# unbound. Usage: launch/mpirun_local.sh -np 4 CMD...
#
# Stopping: Ctrl-C, SIGTERM or SIGHUP to this script asks the ranks to save a checkpoint at the end
# of their step and exit (a second one aborts at once). Open MPI's mpirun cannot do this itself: it
# never forwards SIGINT or SIGTERM, it ends the job instead — SIGTERM to every rank, SIGKILL one
# second later (odls_base_sigkill_timeout), too soon for a save. It does forward SIGUSR1 and kills
# nothing, so this script turns the first stop signal into SIGUSR1 to mpirun, and runs mpirun in a
# session of its own so that a Ctrl-C at the terminal reaches only this script.
#
# SHARDLAB_MPIRUN_PROGRAM names another mpirun (default: the one on PATH). A launcher that
# outlives all of its ranks by 5 s is killed and the ranks' exit returned (launch/launcher_guard.sh:
# Open MPI 4.1's finalize hang).
set -euo pipefail
# shellcheck source=launch/launcher_guard.sh
source "$(dirname "${BASH_SOURCE[0]}")/launcher_guard.sh"
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
# The ranks word their stop messages for this path (launch/stop_request.cpp).
export SHARDLAB_LAUNCHER=mpirun_local.sh
flags+=(-x SHARDLAB_LAUNCHER)

pid= stop=
on_stop() { # $1: the signal's name; $2: the shell's exit code for it
  if [ -z "$stop" ]; then
    stop=$2
    echo "mpirun_local: SIG$1: asking the ranks to save a checkpoint at the end of this step and stop" \
      "(SIGUSR1 to mpirun); send it again to abort without one" >&2
    [ -z "$pid" ] || kill -USR1 "$pid" 2>/dev/null
  else
    echo "mpirun_local: SIG$1 again: aborting without a checkpoint (the last complete one is kept)" >&2
    [ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null
  fi
}
trap 'on_stop INT 130' INT
trap 'on_stop TERM 143' TERM
trap 'on_stop HUP 129' HUP
session=()
! command -v setsid >/dev/null || session=(setsid)
${session[@]+"${session[@]}"} "${SHARDLAB_MPIRUN_PROGRAM:-mpirun}" "${flags[@]}" "$@" &
pid=$!
[ -z "$stop" ] || kill -USR1 "$pid" 2>/dev/null # a signal while mpirun started
launcher_wait "$pid" 5 mpirun_local
rc=$launcher_rc
# Stopped on request with a checkpoint, the ranks exit 138 (128 + SIGUSR1): report the signal this
# script got, as a shell would.
[ -n "$stop" ] && [ "$rc" -eq 138 ] && rc=$stop
exit "$rc"
