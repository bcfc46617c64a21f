#!/usr/bin/env bash
# Memcheck for the CUDA backend: builds build-asan-emu/ (the SIMT emulator build,
# -DSHARDLAB_CUDA=EMU, with AddressSanitizer + UndefinedBehaviorSanitizer, -DSHARDLAB_ASAN=ON) and
# runs the kernel and emulator tests of `ctest -L cuda` in it (test_cuda_ops against the CPU, the
# emulator's runtime, cuBLAS and NCCL stand-ins, the NCCL transport). Device memory is host memory
# under the emulator, so a kernel reading or writing out of bounds, a use after cudaFree and
# undefined behaviour anywhere on the way are reported and fail the run. Not here: the training and
# command-line tests (labels train, cli: the whole `shardlab` program would double this build's
# cost, which CI pays cold) and the lease rehearsal; nor Simt.LaunchLimits... (67 M threads that do
# nothing, 2 minutes under ASan). Leak checking is off: Open MPI's own allocations would drown it.
# Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-build
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build-asan-emu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSHARDLAB_ASAN=ON \
  -DSHARDLAB_CUDA=EMU >/dev/null
cmake --build build-asan-emu -j "$(nproc)" --target test_cuda_ops test_simt test_emu_schedule test_emu_cublas \
  test_emu_nccl test_nccl_transport test_emu_device_query
export ASAN_OPTIONS="detect_leaks=0 abort_on_error=0 halt_on_error=1 detect_stack_use_after_return=0"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
export GTEST_FILTER=-Simt.LaunchLimitsAreCheckedAndNamed
(cd build-asan-emu && ctest --output-on-failure -j "$(nproc)" -L cuda -LE "lease|train|cli" "$@")
echo "asan: the kernel and emulator tests clean"
