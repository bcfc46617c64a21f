// GEMM on row-major matrices: C = alpha * op(A) * op(B) + beta * C, through OpenBLAS.
// fp32 uses sgemm and double dgemm directly; bf16 / fp16 operands are widened to fp32 in the
// caller's workspace (gemm_workspace_floats floats), multiplied with sgemm, and C is rounded once
// — "fp32 accumulation inside kernels".
// Where the CPU has AVX512-BF16 and the OpenBLAS in use exports cblas_sbgemm (Debian's 0.3.21
// does not), bf16 GEMMs go to sbgemm instead (bf16 operands, fp32 accumulation), skipping the
// widening.
#pragma once

#include <cstddef>

#include "model/kernels/cpu/numeric.h"

namespace shardlab::cpu {

template <typename T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const T* A, int lda,
          const T* B, int ldb, float beta, T* C, int ldc, float* workspace);

// Floats of workspace gemm<T> needs for an M x N x K product (0 for fp32 and double).
template <typename T>
std::size_t gemm_workspace_floats(int M, int N, int K);

// True when gemm<bf16_t> uses sbgemm: AVX512-BF16 and an OpenBLAS that exports it.
bool native_bf16_gemm_available();

// The two bf16 paths, callable directly so tests can hold them against each other.
void gemm_bf16_widened(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                       const bf16_t* A, int lda, const bf16_t* B, int ldb, float beta, bf16_t* C,
                       int ldc, float* workspace);
void gemm_bf16_native(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16_t* A,
                      int lda, const bf16_t* B, int ldb, float beta, bf16_t* C, int ldc,
                      float* workspace);

} // namespace shardlab::cpu
