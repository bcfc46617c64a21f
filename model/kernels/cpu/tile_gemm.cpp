// TileGemm: a tile product on the library the backend chose (tile_gemm.h).
#include "model/kernels/cpu/tile_gemm.h"

#include "model/kernels/cpu/gemm.h"

namespace shardlab::cpu {

void TileGemm::operator()(bool ta, bool tb, int M, int N, int K, float alpha, const float* A,
                          int lda, const float* B, int ldb, float beta, float* C, int ldc,
                          std::vector<std::byte>& scratch) const {
    if (!onednn_) {
        gemm<float>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
        return;
    }
    MatmulShape s;
    s.trans_a = ta, s.trans_b = tb, s.M = M, s.N = N, s.K = K;
    s.lda = lda, s.ldb = ldb, s.ldc = ldc, s.alpha = alpha, s.beta = beta;
    const std::size_t need = onednn_->scratchpad_bytes(s);
    if (scratch.size() < need) scratch.resize(need);
    // Inside the kernel's parallel region oneDNN runs the product on this thread alone.
    onednn_->run(s, A, B, nullptr, C, scratch.data());
}

void TileGemm::operator()(bool ta, bool tb, int M, int N, int K, float alpha, const double* A,
                          int lda, const double* B, int ldb, float beta, double* C, int ldc,
                          std::vector<std::byte>&) const {
    gemm<double>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
}

} // namespace shardlab::cpu
