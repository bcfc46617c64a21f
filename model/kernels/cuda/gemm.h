// Row-major GEMMs on cuBLAS, which is column-major: a row-major matrix is the column-major
// matrix of its transpose, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T — the
// operands swapped, the transpose flags kept. fp32 accumulation (CUBLAS_COMPUTE_32F) for fp32,
// bf16 and fp16 storage, one rounding into C. Included by .cu files only.
#pragma once

#include "core/cuda/cublas_library.h"
#include "core/dtype.h"

#include <cuda_runtime.h>

namespace shardlab::cuda {

// One operand: its storage, leading dimension (elements between rows) and the elements between
// consecutive matrices of a batch.
struct Operand {
    const void* data;
    int ld;
    long long stride = 0;
};

// For each of `batch` matrices: C[M, N] = alpha * op(A)[M, K] op(B)[K, N] + beta * C, with
// A and B of type `in` and C of type `out` (out may be fp32 when in is 16-bit).
void gemm(const Cublas& blas, cudaStream_t s, DType in, DType out, bool trans_a, bool trans_b,
          int M, int N, int K, float alpha, Operand a, Operand b, float beta, void* c, int ldc,
          long long stride_c, int batch);

// cuBLAS's name for a storage type.
cudaDataType_t data_type(DType t);

} // namespace shardlab::cuda
