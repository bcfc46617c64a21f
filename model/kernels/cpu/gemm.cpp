// gemm<T>: BLAS directly for fp32 / double; widen-multiply-round for 16-bit storage.
#include "model/kernels/cpu/gemm.h"

#include <cblas.h>

#include <cstddef>

namespace shardlab::cpu {

namespace {
CBLAS_TRANSPOSE tr(bool t) {
    return t ? CblasTrans : CblasNoTrans;
}

// Copies a rows x cols block (leading dimension ld) of 16-bit values into dense fp32.
template <typename T>
void widen(const T* src, int rows, int cols, int ld, float* dst) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            dst[std::size_t(r) * cols + c] = to_acc(src[std::size_t(r) * ld + c]);
}
} // namespace

template <>
void gemm<float>(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc, ScratchBuffer&) {
    cblas_sgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <>
void gemm<double>(bool ta, bool tb, int M, int N, int K, float alpha, const double* A, int lda,
                  const double* B, int ldb, float beta, double* C, int ldc, ScratchBuffer&) {
    cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <typename T>
void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const T* A, int lda, const T* B,
          int ldb, float beta, T* C, int ldc, ScratchBuffer& workspace) {
    // Stored shapes: op(A) is M x K, so A is (ta ? K x M : M x K); likewise B.
    const int a_rows = ta ? K : M, a_cols = ta ? M : K;
    const int b_rows = tb ? N : K, b_cols = tb ? K : N;
    const std::size_t na = std::size_t(a_rows) * a_cols, nb = std::size_t(b_rows) * b_cols;
    float* a = workspace.get_as<float>(na + nb + std::size_t(M) * N);
    float* b = a + na;
    float* c = b + nb;
    widen(A, a_rows, a_cols, lda, a);
    widen(B, b_rows, b_cols, ldb, b);
    if (beta != 0.0f) widen(C, M, N, ldc, c);
    cblas_sgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, a, a_cols, b, b_cols, beta, c, N);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col)
            C[std::size_t(r) * ldc + col] = from_acc<T>(c[std::size_t(r) * N + col]);
}

template void gemm<bf16_t>(bool, bool, int, int, int, float, const bf16_t*, int, const bf16_t*, int,
                           float, bf16_t*, int, ScratchBuffer&);
template void gemm<f16_t>(bool, bool, int, int, int, float, const f16_t*, int, const f16_t*, int,
                          float, f16_t*, int, ScratchBuffer&);

} // namespace shardlab::cpu
