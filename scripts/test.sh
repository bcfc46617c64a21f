#!/usr/bin/env bash
# Sets everything up (Debian packages, build) and runs every test: unit, multi-rank (mpirun -np
# 1..5) and command-line tests; the CUDA backend's under the SIMT emulator (scripts/build_emu.sh,
# `ctest -L cuda`), and its kernel and emulator tests again with the block's threads run in reverse
# and in a seeded random order (SHARDLAB_EMU_SCHEDULE; a new seed each run, printed, so a failure
# reproduces with it); then the ThreadSanitizer build's (scripts/tsan.sh: also the race detector on
# the kernels); the AddressSanitizer + UBSan emulator build's kernel and emulator tests
# (scripts/asan_emu.sh); then each input parser's libFuzzer harness for 7 seconds (scripts/fuzz.sh).
# This is exactly what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
scripts/build_emu.sh
(cd build-emu && ctest --output-on-failure -j "$(nproc)" -L cuda "$@")
# (Simt.LaunchLimits... launches 67 M threads that do nothing: no order to vary, 15 s to pay.)
for schedule in reverse "random:${SHARDLAB_EMU_SEED:-$(date +%s)}"; do
  echo "emulator tests under SHARDLAB_EMU_SCHEDULE=$schedule"
  SHARDLAB_EMU_SCHEDULE=$schedule build-emu/tests/test_cuda_ops --gtest_brief=1
  SHARDLAB_EMU_SCHEDULE=$schedule build-emu/tests/test_simt --gtest_brief=1 \
    --gtest_filter=-Simt.LaunchLimitsAreCheckedAndNamed
done
scripts/tsan.sh
scripts/asan_emu.sh
scripts/fuzz.sh --seconds 7
