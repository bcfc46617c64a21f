// sgemm by column blocks (core/sgemm_blocks.h): where a block of columns starts in B and C.
#include "core/sgemm_blocks.h"

#include <cblas.h>

#include <cstddef>

namespace shardlab {

void sgemm_blocks(bool col_major, bool ta, bool tb, int M, int N, int K, float alpha,
                  const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
    // Where op(B)'s column j starts: row-major, at B + j (at row j, B + j ldb, when transposed);
    // column-major, at column j, B + j ldb (at row j, B + j, when transposed). C's column j:
    // row-major C + j, column-major C + j ldc.
    for_column_blocks(N, [&](int j, int n) {
        const float* b = B + (col_major ? (tb ? std::size_t(j) : std::size_t(j) * ldb)
                                        : (tb ? std::size_t(j) * ldb : std::size_t(j)));
        float* c = C + (col_major ? std::size_t(j) * ldc : std::size_t(j));
        cblas_sgemm(col_major ? CblasColMajor : CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, M, n, K, alpha, A, lda, b, ldb, beta, c, ldc);
    });
}

} // namespace shardlab
