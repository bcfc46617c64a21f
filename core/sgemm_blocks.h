// OpenBLAS's sgemm with bits that do not depend on the thread count. OpenBLAS's own threading
// gives other bits at other thread counts (each thread's slice of the output runs other edge
// kernels, which sum K in another order: tests/test_gemm_contract.cpp), and it follows the
// calling thread's OpenMP team. So the product is threaded here instead: the result's columns in
// blocks whose width depends on N alone — a multiple of 64, at most kMaxColumnBlocks of them (each
// block repacks A: few wide blocks beat many narrow ones) — each block one single-threaded call
// (OpenBLAS runs one thread inside a parallel region, and in a team of one). The blocks, and so the
// bits, are the same at any thread count (issue 23). Used by the CPU kernels
// (model/kernels/cpu/gemm.cpp) and the emulator's cuBLAS, as a GPU's cuBLAS is independent of the
// host's threads.
#pragma once

#include <algorithm>

namespace shardlab {

constexpr int kMaxColumnBlocks = 16;

// Calls fn(first column, columns) for each block of an N-column result, in an OpenMP loop.
template <typename Fn>
void for_column_blocks(int N, Fn&& fn) {
    const int width = std::max(64, (N + 64 * kMaxColumnBlocks - 1) / (64 * kMaxColumnBlocks) * 64);
    const int blocks = (N + width - 1) / width;
#pragma omp parallel for schedule(static)
    for (int b = 0; b < blocks; ++b) fn(b * width, std::min(width, N - b * width));
}

// C (M x N) = alpha op(A) op(B) + beta C, as cblas_sgemm with the given storage order.
void sgemm_blocks(bool col_major, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                  const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc);

} // namespace shardlab
