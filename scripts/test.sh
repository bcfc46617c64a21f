#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs every test: unit, multi-rank (mpirun -np
# 1..6) and command-line tests; the CUDA backend's (`ctest -L cuda`) under the SIMT emulator built
# with AddressSanitizer + UBSan (scripts/asan_emu.sh: its kernel tests also with the block's
# threads in reverse and in a seeded random order); then the ThreadSanitizer build's
# (scripts/tsan.sh: also the race detector on the kernels); then each input parser's libFuzzer
# harness for 7 seconds (scripts/fuzz.sh). This is exactly what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
scripts/asan_emu.sh "$@"
scripts/tsan.sh
scripts/fuzz.sh --seconds 7
