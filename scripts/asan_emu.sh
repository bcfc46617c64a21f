#!/usr/bin/env bash
# The CUDA backend's tests, as CI runs them: builds build-asan-emu/ (the SIMT emulator build,
# scripts/build_emu.sh, with AddressSanitizer + UndefinedBehaviorSanitizer: -DSHARDLAB_ASAN=ON) and
# runs every test of `ctest -L cuda` in it — the kernels against the CPU, the emulator's runtime,
# cuBLAS and NCCL stand-ins, training and the command line on the emulated GPUs, the lease's dry
# run — then the kernel and emulator tests again with each block's threads in reverse and in a
# seeded random order (SHARDLAB_EMU_SCHEDULE; a new seed each run, printed, so a failure
# reproduces with it). Device memory is host memory under the emulator, so a kernel reading or
# writing out of bounds, a use after cudaFree and undefined behaviour anywhere on the way are
# reported and fail the run. One build serves both: a plain emulator build beside it would cost CI
# a third full build for nothing ASan does not also check (docs/DECISIONS.md). Leak checking is
# off: Open MPI's own allocations would drown it. Extra arguments go to ctest. Part of
# scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-build
SHARDLAB_EMU_BUILD=build-asan-emu scripts/build_emu.sh -DSHARDLAB_ASAN=ON
export ASAN_OPTIONS="detect_leaks=0 abort_on_error=0 halt_on_error=1 detect_stack_use_after_return=0"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
(cd build-asan-emu && ctest --output-on-failure -j "$(nproc)" -L cuda "$@")
for schedule in reverse "random:${SHARDLAB_EMU_SEED:-$(date +%s)}"; do
  echo "emulator tests under SHARDLAB_EMU_SCHEDULE=$schedule"
  SHARDLAB_EMU_SCHEDULE=$schedule build-asan-emu/tests/test_cuda_ops --gtest_brief=1
  SHARDLAB_EMU_SCHEDULE=$schedule build-asan-emu/tests/test_simt --gtest_brief=1
done
echo "asan: every CUDA test clean, under three schedules for the kernels"
