#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs every test: unit, multi-rank (mpirun -np
# 1..5) and command-line tests; the CUDA backend's under the SIMT emulator (scripts/build_emu.sh,
# `ctest -L cuda`); then the ThreadSanitizer build's (scripts/tsan.sh); then each input parser's
# libFuzzer harness for 7 seconds (scripts/fuzz.sh). This is exactly what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
scripts/build_emu.sh
(cd build-emu && ctest --output-on-failure -j "$(nproc)" -L cuda "$@")
scripts/tsan.sh
scripts/fuzz.sh --seconds 7
