// GEMM on row-major matrices: C = alpha * op(A) * op(B) + beta * C, through OpenBLAS.
// fp32 uses sgemm and double dgemm directly; bf16 / fp16 operands are widened to fp32 in
// workspace, multiplied with sgemm, and C is rounded once — "fp32 accumulation inside kernels".
// (OpenBLAS's sbgemm needs AVX512-BF16, which the CPUs we target often lack.)
#pragma once

#include "core/scratch_buffer.h"
#include "model/kernels/cpu/numeric.h"

namespace shardlab::cpu {

template <typename T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const T* A, int lda,
          const T* B, int ldb, float beta, T* C, int ldc, ScratchBuffer& workspace);

} // namespace shardlab::cpu
