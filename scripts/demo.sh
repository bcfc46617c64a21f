#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs the main job: `shardlab train` on 2 ranks
# with ZeRO-3 and CPU optimizer offload, on the license texts every Debian machine has
# (examples/demo.toml: a 0.84M-parameter GPT-2, about two minutes on 2 cores). It prints the
# loss as it falls, samples text from the trained model, and prints every rank's memory and
# traffic next to the plan's prediction; then `shardlab report` draws the plots and writes
# out/demo/summary.md (its path is printed last). Extra arguments go to `shardlab train`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
launch/mpirun_local.sh -np 2 build/shardlab train --config examples/demo.toml --out out/demo --overwrite "$@"
out=out/demo # the report follows an --out among the extra arguments (the last one wins, as in train)
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in --out) out=${args[i + 1]:-$out} ;; --out=*) out=${args[i]#--out=} ;; esac
done
build/shardlab report "$out"
