#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs every test: unit, multi-rank (mpirun -np
# 1..5) and command-line tests, then the ThreadSanitizer build's (scripts/tsan.sh). This is
# exactly what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
scripts/tsan.sh
