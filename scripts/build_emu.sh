#!/usr/bin/env bash
# Builds the CUDA backend for the CPU into build-emu/: the same .cu sources compiled by the host
# compiler against the SIMT emulator and its stand-ins for the CUDA runtime, cuBLAS and NCCL
# (emu/, test infrastructure). `build-emu/shardlab ... --device cuda` then runs on the CPU, and
# `cd build-emu && ctest -L cuda` runs the CUDA tests. No GPU and no CUDA toolkit needed.
# Extra arguments go to CMake; SHARDLAB_EMU_BUILD names another folder (scripts/asan_emu.sh
# builds the sanitizer variant into build-asan-emu/ this way).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${SHARDLAB_EMU_BUILD:-build-emu}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
[ -f "$dir/CMakeCache.txt" ] || cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSHARDLAB_CUDA=EMU "$@" >/dev/null
[ $# -eq 0 ] || cmake -S . -B "$dir" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)" --target shardlab test_cuda_ops test_simt test_emu_schedule test_emu_cublas test_emu_cublaslt test_emu_nccl \
  test_nccl_transport test_emu_device_query test_cublas_library
