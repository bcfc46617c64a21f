// A serial sum with its loads issued ahead: the column-sum kernels (column_sums.cu, the norms'
// parameter gradients) have one thread add a column's rows, or a column's partials, one after
// another in a fixed order, for the same bits every run. Left as a plain loop, the compiler keeps
// about 4 loads in flight per thread, and these kernels have few threads (768 columns: 6 blocks to
// add the partials), so they wait on memory's latency rather than its bandwidth. in_order loads
// kBatch items first, then folds them in order: kBatch round trips overlap, the sum's order and
// bits are unchanged. Included by .cu files only.
#pragma once

#include "core/cuda/unroll.h"

#include <cuda_runtime.h>

namespace shardlab::cuda {

// Rows in flight per thread: 16 loads of 2 to 8 bytes, a few registers each.
constexpr int kInOrderBatch = 16;

// Calls fold(load(i)) for i = first, first + 1, ..., last - 1, in that order, with the loads of
// kInOrderBatch consecutive i issued before their folds.
template <typename Load, typename Fold>
__device__ __forceinline__ void in_order(int first, int last, Load load, Fold fold) {
    using V = decltype(load(first));
    int i = first;
    for (; i + kInOrderBatch <= last; i += kInOrderBatch) {
        V v[kInOrderBatch];
        SHARDLAB_UNROLL
        for (int b = 0; b < kInOrderBatch; ++b) v[b] = load(i + b);
        SHARDLAB_UNROLL
        for (int b = 0; b < kInOrderBatch; ++b) fold(v[b]);
    }
    for (; i < last; ++i) fold(load(i));
}

} // namespace shardlab::cuda
