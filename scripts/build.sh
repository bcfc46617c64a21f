#!/usr/bin/env bash
# Configures and builds shardlab into build/ (Release; CUDA parts too when nvcc is found).
# Extra arguments go to CMake, e.g. scripts/build.sh -DSHARDLAB_NATIVE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
[ -f build/CMakeCache.txt ] || cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
[ $# -eq 0 ] || cmake -S . -B build "$@" >/dev/null
cmake --build build -j "$(nproc)"
