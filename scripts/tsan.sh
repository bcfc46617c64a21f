#!/usr/bin/env bash
# ThreadSanitizer: builds build-tsan/ (-DSHARDLAB_TSAN=ON, the CUDA backend under the SIMT emulator)
# and runs under it nine core unit tests (streams, allocator, tracker, dtypes, comm model, model,
# plan, token data, safetensors), the collectives and ZeRO engine tests on 2 ranks, and 2-rank
# training in the stages and modes whose streams interact most (ZeRO-2 and ZeRO-3 with prefetch,
# offload, fp16, gradient accumulation, checkpointing, resume with offload). Then the race
# detector: what it takes to order a warp's lanes (test_simt's SimtRaceDetector: __syncwarp does,
# a shuffle, vote, mma or WMMA call does not), the CUDA kernels' tests, where two threads of a block
# touching one address without a barrier between them is a report (emu/fiber_sanitizers.h), and its
# mutation test: deleting any one __syncthreads or __syncwarp of the kernels must be reported
# (tests/barrier_mutants.sh). Any report fails the run (exit code 66). Part of scripts/test.sh, so
# CI runs it too.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-build
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build-tsan "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSHARDLAB_TSAN=ON \
  -DSHARDLAB_CUDA=EMU >/dev/null
unit=(test_streams test_caching_allocator test_memory_tracker test_dtype test_comm_model test_model
      test_plan test_token_data test_safetensors)
cmake --build build-tsan -j "$(nproc)" --target shardlab test_collectives test_zero_engine \
  test_cuda_ops test_simt "${unit[@]}"

export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp"
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for t in "${unit[@]}"; do
  build-tsan/tests/$t > "$work/$t.log" 2>&1 || { cat "$work/$t.log"; echo "tsan: $t FAILED"; exit 1; }
  echo "tsan: $t clean"
done
for t in test_collectives test_zero_engine; do
  "${mpirun[@]}" -np 2 build-tsan/tests/$t > "$work/$t.log" 2>&1 || { cat "$work/$t.log"; echo "tsan: $t (2 ranks) FAILED"; exit 1; }
  echo "tsan: $t on 2 ranks clean"
done
small=(--layers 2 --hidden 64 --heads 4 --seq 32 --vocab 256 --micro-batch 2 --steps 3 --quiet)
for cfg in "--zero 3 --prefetch 1" "--zero 3 --prefetch 2 --checkpoint all --grad-accum 2" \
           "--zero 2 --grad-accum 2" "--zero 3 --offload" "--zero 1 --offload --precision fp16" \
           "--zero 3 --offload --steps 4 --save-every 2 --stop-after 2"; do
  rm -rf "$work/run"
  # shellcheck disable=SC2086
  "${mpirun[@]}" -np 2 build-tsan/shardlab train "${small[@]}" $cfg --out "$work/run" > "$work/train.log" 2>&1 \
    || { cat "$work/train.log"; echo "tsan: train $cfg FAILED"; exit 1; }
  echo "tsan: train $cfg on 2 ranks clean"
done
"${mpirun[@]}" -np 2 build-tsan/shardlab train "${small[@]}" --zero 3 --offload --steps 4 --resume "$work/run" --out "$work/run" > "$work/train.log" 2>&1 \
  || { cat "$work/train.log"; echo "tsan: resume FAILED"; exit 1; }
echo "tsan: resume on 2 ranks clean"
build-tsan/tests/test_simt --gtest_filter='SimtRaceDetector.*' > "$work/simt.log" 2>&1 || { cat "$work/simt.log"; echo "tsan: SimtRaceDetector FAILED"; exit 1; }
echo "tsan: the race detector orders a warp's lanes at __syncwarp only"
# (libgomp is not built with TSan, and the test's CPU reference does not go through set_threads.)
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build-tsan/tests/test_cuda_ops > "$work/cuda.log" 2>&1 || { cat "$work/cuda.log"; echo "tsan: test_cuda_ops FAILED"; exit 1; }
echo "tsan: test_cuda_ops (the kernels under the race detector) clean"
tests/barrier_mutants.sh build-tsan/tests/test_cuda_ops "$PWD" || { echo "tsan: barrier_mutants FAILED"; exit 1; }
echo "tsan: all clean"
