#!/usr/bin/env bash
# Memcheck for the CUDA backend: builds build-asan-emu/ (the SIMT emulator build,
# -DSHARDLAB_CUDA=EMU, with AddressSanitizer + UndefinedBehaviorSanitizer, -DSHARDLAB_ASAN=ON) and
# runs `ctest -L cuda` in it, but the lease rehearsal. Device memory is host memory under the
# emulator, so a kernel reading or writing out of bounds, a use after cudaFree and undefined
# behaviour anywhere on the way are reported and fail the run. Leak checking is off: Open MPI's own
# allocations would drown it. Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-build
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build-asan-emu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSHARDLAB_ASAN=ON \
  -DSHARDLAB_CUDA=EMU >/dev/null
cmake --build build-asan-emu -j "$(nproc)" --target shardlab test_cuda_ops test_simt test_emu_schedule test_emu_cublas \
  test_emu_nccl test_nccl_transport test_emu_device_query
export ASAN_OPTIONS="detect_leaks=0 abort_on_error=0 halt_on_error=1 detect_stack_use_after_return=0"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
# (Not the lease rehearsal: it packs and unpacks this build, which proves nothing about memory.)
(cd build-asan-emu && ctest --output-on-failure -j "$(nproc)" -L cuda -LE lease "$@")
echo "asan: ctest -L cuda clean"
