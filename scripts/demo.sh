#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs the main job: for now the step-by-step
# walkthrough of a ring AllReduce on 4 ranks (the training demo replaces it when it lands).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
launch/mpirun_local.sh -np 4 build/shardlab collectives show --op allreduce --count 10
