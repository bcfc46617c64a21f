// Row kernels (LayerNorm, RMSNorm) take their rows in groups of kRows. Each row's sums still run
// in index order, as for a row alone, so the bits are a row's own; but the group's chains
// interleave, where one row at a time waited on every add's latency (about 4 cycles).
#pragma once

#include <cstddef>

namespace shardlab::cpu {

constexpr int kRows = 8;
// Columns of a group's terms a kernel computes at once, vectorised along the row, before adding
// them in order with add_in_order (kRows x kChunk fp32 values: 2 KiB).
constexpr int kChunk = 64;

// Calls rows.template operator()<R>(first row) over [0, N): groups of kRows in parallel, then the
// last N % kRows rows one by one.
template <typename Rows>
void for_row_groups(int N, Rows&& rows) {
    const int groups = N / kRows;
#pragma omp parallel for schedule(static)
    for (int g = 0; g < groups; ++g) rows.template operator()<kRows>(g * kRows);
    for (int r = groups * kRows; r < N; ++r) rows.template operator()<1>(r);
}

// sums[j] += terms[j][0], terms[j][1], ..., terms[j][n - 1], in that order, the rows interleaved.
template <int R, typename A>
inline void add_in_order(A (&sums)[R], const A (&terms)[R][kChunk], int n) {
    for (int k = 0; k < n; ++k)
        for (int j = 0; j < R; ++j) sums[j] += terms[j][k];
}

} // namespace shardlab::cpu
