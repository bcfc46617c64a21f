// TileGemm: a tile product on the library the backend chose (tile_gemm.h).
#include "model/kernels/cpu/tile_gemm.h"

#include "core/error.h"
#include "model/kernels/cpu/gemm.h"

namespace shardlab::cpu {

namespace {
MatmulShape tile_shape(DType dtype, bool ta, bool tb, int M, int N, int K, float alpha, int lda,
                       int ldb, float beta, int ldc) {
    MatmulShape s;
    s.dtype = dtype, s.f32_out = true;
    s.trans_a = ta, s.trans_b = tb, s.M = M, s.N = N, s.K = K;
    s.lda = lda, s.ldb = ldb, s.ldc = ldc, s.alpha = alpha, s.beta = beta;
    return s;
}
} // namespace

void TileGemm::operator()(bool ta, bool tb, int M, int N, int K, float alpha, const float* A,
                          int lda, const float* B, int ldb, float beta, float* C, int ldc,
                          MatmulThreadState& state) const {
    if (!onednn_) return gemm<float>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
    onednn_->run(tile_shape(DType::f32, ta, tb, M, N, K, alpha, lda, ldb, beta, ldc), A, B, C,
                 state);
}

void TileGemm::operator()(bool ta, bool tb, int M, int N, int K, float alpha, const double* A,
                          int lda, const double* B, int ldb, float beta, double* C, int ldc,
                          MatmulThreadState&) const {
    gemm<double>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
}

void TileGemm::operator()(bool ta, bool tb, int M, int N, int K, float alpha, const bf16_t* A,
                          int lda, const bf16_t* B, int ldb, float beta, float* C, int ldc,
                          MatmulThreadState& state) const {
    check(bf16_operands_, "internal: bf16 tile products need oneDNN's bf16 matmul");
    onednn_->run(tile_shape(DType::bf16, ta, tb, M, N, K, alpha, lda, ldb, beta, ldc), A, B, C,
                 state);
}

} // namespace shardlab::cpu
