# shellcheck shell=bash
# Sourced, not run: waits for a launcher (mpirun) and ends one that outlives the job it ran.
# Open MPI 4.1's mpirun can deadlock in its own finalize after its job ended: every rank has
# exited and is <defunct>, never reaped (docs/RELIABILITY.md section 9). The ranks' messages are
# out by then and nothing is left to lose, so a launcher whose children have all been zombies for
# GRACE seconds is killed, and the job's exit is read from the zombies as mpirun would report it.

# proc_fields PID ARRAY: ARRAY gets the fields of /proc/PID/stat from field 3 on (those after the
# parenthesised command name, which may hold spaces): [0] the state letter, [49] the exit status
# in waitpid's form. Fails once the process is gone. Builtins only: it is called twice a second.
# shellcheck disable=SC2034 # out names the caller's array
proc_fields() {
  local -n out=$2
  local stat
  read -r stat <"/proc/$1/stat" 2>/dev/null || return 1
  read -r -a out <<<"${stat##*) }"
}

# launcher_wait PID GRACE NAME: waits for the launcher PID (a child of this shell) and sets
# launcher_rc to its exit. Once every child of it has been a zombie for GRACE seconds, NAME says so
# on stderr, the launcher is killed and launcher_rc is the first non-zero exit among those ranks
# (0 if none), as mpirun reports it. A launcher with no child yet, or a live one, is waited for as
# long as it runs. It polls twice a second with builtins and /proc (the children lists of the
# launcher's threads), so it costs nothing next to the job, and a trapped signal's handler runs
# within half a second.
launcher_wait() {
  local pid=$1 grace=$2 name=$3 idle=0 f k s live kids fields list
  launcher_rc=
  while kill -0 "$pid" 2>/dev/null; do
    kids=() live=0
    for f in /proc/"$pid"/task/*/children; do
      list=()
      read -r -a list <"$f" 2>/dev/null || true # the list ends without a newline: read says 1
      kids+=(${list[@]+"${list[@]}"})
    done
    for k in ${kids[@]+"${kids[@]}"}; do
      proc_fields "$k" fields && [ "${fields[0]}" = Z ] || live=1
    done
    if ((live || ${#kids[@]} == 0)); then
      idle=0
    elif (((idle += 1) >= grace * 2)); then
      launcher_rc=0
      for k in "${kids[@]}"; do
        proc_fields "$k" fields || continue
        s=${fields[49]:-0}
        if ((s & 0x7f)); then s=$((128 + (s & 0x7f))); else s=$((s >> 8)); fi # killed, or exited
        ((launcher_rc != 0)) || launcher_rc=$s
      done
      echo "$name: every rank exited $grace s ago and mpirun has not (Open MPI 4.1 can hang in its" \
        "finalize, docs/RELIABILITY.md section 9): killed it; the ranks' exit: $launcher_rc" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
    sleep 0.5
  done
  local rc=0
  wait "$pid" 2>/dev/null || rc=$?
  launcher_rc=${launcher_rc:-$rc}
}
