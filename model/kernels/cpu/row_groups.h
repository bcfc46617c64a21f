// Row kernels (LayerNorm, RMSNorm, the flash attention's softmax rows) take their rows in groups
// of kGroupRows. Each row's sums still run in index order, as for a row alone, so the bits are a
// row's own; but the group's chains interleave, where one row at a time waited on every add's
// latency (about 4 cycles).
#pragma once

#include <cstddef>

namespace shardlab::cpu {

constexpr int kGroupRows = 8;
// Columns of a group's terms a kernel computes at once, vectorised along the row, before adding
// them in order with add_in_order (kGroupRows x kGroupCols fp32 values: 2 KiB).
constexpr int kGroupCols = 64;

// Calls rows.template operator()<R>(first row) over [0, n) on the calling thread: groups of
// kGroupRows, then the last n % kGroupRows rows one by one (R = 1).
template <typename Rows>
void for_row_groups_here(int n, Rows&& rows) {
    int r = 0;
    for (; r + kGroupRows <= n; r += kGroupRows) rows.template operator()<kGroupRows>(r);
    for (; r < n; ++r) rows.template operator()<1>(r);
}

// The same with the groups split over the OpenMP team.
template <typename Rows>
void for_row_groups(int n, Rows&& rows) {
    const int groups = n / kGroupRows;
#pragma omp parallel for schedule(static)
    for (int g = 0; g < groups; ++g) rows.template operator()<kGroupRows>(g * kGroupRows);
    for (int r = groups * kGroupRows; r < n; ++r) rows.template operator()<1>(r);
}

// sums[j] += terms[j][0], terms[j][1], ..., terms[j][n - 1], in that order, the rows interleaved.
template <int R, typename A>
inline void add_in_order(A (&sums)[R], const A (&terms)[R][kGroupCols], int n) {
    for (int k = 0; k < n; ++k)
        for (int j = 0; j < R; ++j) sums[j] += terms[j][k];
}

} // namespace shardlab::cpu
