// gemm<T>: BLAS directly for fp32 / double; widen-multiply-round for 16-bit storage.
#include "model/kernels/cpu/gemm.h"

#include "core/error.h"
#include "core/sgemm_blocks.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

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

// C = alpha op(A) op(B) + beta C, fp32, row-major: by column blocks, so no bit depends on the
// thread count (core/sgemm_blocks.h).
void sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
    sgemm_blocks(false, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
} // namespace

template <>
void gemm<float>(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc, float*) {
    sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <>
void gemm<double>(bool ta, bool tb, int M, int N, int K, float alpha, const double* A, int lda,
                  const double* B, int ldb, float beta, double* C, int ldc, float*) {
    cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Widen both operands (and C when it is read) to fp32, sgemm, round C once.
template <typename T>
void gemm_widened(bool ta, bool tb, int M, int N, int K, float alpha, const T* A, int lda,
                  const T* B, int ldb, float beta, T* C, int ldc, float* workspace) {
    // Stored shapes: op(A) is M x K, so A is (ta ? K x M : M x K); likewise B.
    const int a_rows = ta ? K : M, a_cols = ta ? M : K;
    const int b_rows = tb ? N : K, b_cols = tb ? K : N;
    const std::size_t na = std::size_t(a_rows) * a_cols, nb = std::size_t(b_rows) * b_cols;
    float* a = workspace;
    float* b = a + na;
    float* c = b + nb;
    widen(A, a_rows, a_cols, lda, a);
    widen(B, b_rows, b_cols, ldb, b);
    if (beta != 0.0f) widen(C, M, N, ldc, c);
    sgemm(ta, tb, M, N, K, alpha, a, a_cols, b, b_cols, beta, c, N);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col)
            C[std::size_t(r) * ldc + col] = from_acc<T>(c[std::size_t(r) * N + col]);
}

namespace {
// Debian's OpenBLAS 0.3.21 is built without BUILD_BFLOAT16: cblas.h declares cblas_sbgemm but the
// library does not export it. Look it up at run time so an OpenBLAS that has it gets used.
using SbgemmFn = decltype(&cblas_sbgemm);
SbgemmFn find_sbgemm() {
    return reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
}
} // namespace

template <typename T>
std::size_t gemm_workspace_floats(int M, int N, int K) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return 0;
    // Widened A, B and C (or, on the native bf16 path, C alone: the larger bound serves both).
    return std::size_t(M) * K + std::size_t(K) * N + std::size_t(M) * N;
}
template std::size_t gemm_workspace_floats<float>(int, int, int);
template std::size_t gemm_workspace_floats<double>(int, int, int);
template std::size_t gemm_workspace_floats<bf16_t>(int, int, int);
template std::size_t gemm_workspace_floats<f16_t>(int, int, int);

bool native_bf16_gemm_available() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") && find_sbgemm() != nullptr;
}

void gemm_bf16_widened(bool ta, bool tb, int M, int N, int K, float alpha, const bf16_t* A, int lda,
                       const bf16_t* B, int ldb, float beta, bf16_t* C, int ldc, float* ws) {
    gemm_widened(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ws);
}

void gemm_bf16_native(bool ta, bool tb, int M, int N, int K, float alpha, const bf16_t* A, int lda,
                      const bf16_t* B, int ldb, float beta, bf16_t* C, int ldc, float* ws) {
    static_assert(sizeof(bf16_t) == sizeof(bfloat16));
    float* c = ws;
    if (beta != 0.0f) widen(C, M, N, ldc, c);
    static const SbgemmFn sbgemm = find_sbgemm();
    check(sbgemm != nullptr, "this OpenBLAS has no cblas_sbgemm (built without BUILD_BFLOAT16)");
    const auto* a = reinterpret_cast<const bfloat16*>(A);
    const auto* b = reinterpret_cast<const bfloat16*>(B);
    for_column_blocks(N, [&](int j, int n) {
        sbgemm(CblasRowMajor, tr(ta), tr(tb), M, n, K, alpha, a, lda,
               tb ? b + std::size_t(j) * ldb : b + j, ldb, beta, c + j, N);
    });
#pragma omp parallel for schedule(static)
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col)
            C[std::size_t(r) * ldc + col] = from_acc<bf16_t>(c[std::size_t(r) * N + col]);
}

template <>
void gemm<f16_t>(bool ta, bool tb, int M, int N, int K, float alpha, const f16_t* A, int lda,
                 const f16_t* B, int ldb, float beta, f16_t* C, int ldc, float* ws) {
    gemm_widened(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ws);
}

template <>
void gemm<bf16_t>(bool ta, bool tb, int M, int N, int K, float alpha, const bf16_t* A, int lda,
                  const bf16_t* B, int ldb, float beta, bf16_t* C, int ldc, float* ws) {
    static const bool native = native_bf16_gemm_available();
    if (native) return gemm_bf16_native(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ws);
    gemm_widened(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ws);
}

} // namespace shardlab::cpu
