// Row-major GEMM through cublasGemmStridedBatchedEx (see gemm.h for the operand swap).
#include "model/kernels/cuda/gemm.h"

namespace shardlab::cuda {

cudaDataType_t data_type(DType t) {
    switch (t) {
    case DType::f32:
        return CUDA_R_32F;
    case DType::bf16:
        return CUDA_R_16BF;
    case DType::f16:
        return CUDA_R_16F;
    case DType::i64:
        break;
    }
    return CUDA_R_32F;
}

void gemm(const Cublas& blas, cudaStream_t s, DType in, DType out, bool trans_a, bool trans_b,
          int M, int N, int K, float alpha, Operand a, Operand b, float beta, void* c, int ldc,
          long long stride_c, int batch) {
    if (M == 0 || N == 0 || batch == 0) return;
    blas.check(blas.api().cublasSetStream(blas.handle(), s), "cublasSetStream");
    // Column-major: C^T [N x M] = op(B)^T [N x K] op(A)^T [K x M].
    blas.check(blas.api().cublasGemmStridedBatchedEx(
                   blas.handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, b.data, data_type(in),
                   b.ld, b.stride, a.data, data_type(in), a.ld, a.stride, &beta, c, data_type(out),
                   ldc, stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

} // namespace shardlab::cuda
