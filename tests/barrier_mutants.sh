#!/usr/bin/env bash
# Mutation test of the race detector (the ThreadSanitizer emulator build, scripts/tsan.sh): every
# `__syncthreads();` and `__syncwarp();` in model/kernels/cuda/ is deleted in turn
# (SHARDLAB_EMU_DELETE_BARRIER=FILE:LINE makes the emulator skip it, as if it were not in the
# source) and the test of the kernel behind it must then report a data race. (Shuffles, votes, mma
# and WMMA's functions order no memory, as in CUDA, so none of them hides a deleted __syncwarp.)
# A barrier without an entry below fails the test: a new one needs the test that exercises it.
# Usage: barrier_mutants.sh TEST_CUDA_OPS SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
# The test that runs each file's barriers.
declare -A test_of=(
  [cross_entropy.cu]='CudaOps.CrossEntropy*' [embedding.cu]='CudaOps.Embedding*'
  # block_reduce: the gradient norm's double sums and the fixed-point maxima and int64 sums
  [warp_reduce.h]='CudaOps.SquaredNorm*:CudaOps.FixedPointSumsAreTheCpusBitForBit'
  [flash_attention.cu]='CudaOps.FlashAttentionIsBitwiseDeterministic'
  [flash_attention_mma.cu]='CudaOps.FlashAttentionIsBitwiseDeterministic:CudaOps.FlashAttentionMmaRegs*:CudaOps.FlashAttentionOneStage*'
  [flash_attention_wmma.cu]='CudaOps.FlashAttentionWmmaIsBitwiseDeterministic'
)
# Barriers no current caller needs (FILE:LINE, skipped): none at present.
declare -A unneeded=()
export TSAN_OPTIONS="halt_on_error=1 exitcode=66"
# libgomp is not built with TSan (its barriers are invisible to it): the CPU reference on one thread.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail=0 n=0
while IFS=: read -r path line _; do
  file=$(basename "$path") site="$(basename "$path"):$line"
  if [ -n "${unneeded[$site]:-}" ]; then echo "barrier $site: not needed by any caller, skipped"; continue; fi
  filter=${test_of[$file]:-}
  if [ -z "$filter" ]; then echo "barrier $site: no test listed for $file in $0"; fail=1; continue; fi
  n=$((n + 1))
  start=$(date +%s%N)
  SHARDLAB_EMU_DELETE_BARRIER=$site "$bin" --gtest_filter="$filter" >"$log" 2>&1
  took=$((($(date +%s%N) - start) / 100000000)) took=$((took / 10)).$((took % 10))
  if ! grep -q "barrier at $site is deleted" "$log"; then
    echo "barrier $site: never reached by $filter"; fail=1
  elif grep -q "WARNING: ThreadSanitizer: data race" "$log"; then
    echo "barrier $site deleted: race reported (${took} s): $(grep -m1 -o "Thread T[0-9]* 'CUDA kernel [^']*'" "$log")"
  else
    cat "$log"; echo "barrier $site deleted: NO race reported by $filter"; fail=1
  fi
done < <(grep -n '^[[:space:]]*__sync\(threads\|warp\)();' "$src"/model/kernels/cuda/*.cu "$src"/model/kernels/cuda/*.h)
[ "$n" -ge 3 ] || { echo "only $n barriers found"; fail=1; }
exit $fail
