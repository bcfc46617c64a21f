// A serial sum with its loads issued ahead: the column-sum kernels (column_sums.cu, the norms'
// parameter gradients) have one thread add a column's rows, or a column's partials, and the
// squared norm one thread its strided elements, one after another in a fixed order, for the same
// bits every run. Left as plain loops, the compiler kept at most 4 loads in flight per thread
// (none ahead in the squared norm's strided loop, whose threads each walk about 150 elements of
// the embeddings' unit), and these kernels have few threads (768 columns: 6 blocks to add the
// partials), so they wait on memory's latency rather than its bandwidth. in_order loads a batch of
// items first, then folds them in order: the batch's round trips overlap, the sum's order and bits
// are unchanged. Included by .cu files only.
#pragma once

#include "core/cuda/unroll.h"

#include <cuda_runtime.h>

namespace shardlab::cuda {

// Items in flight per thread: 16 loads of 2 to 8 bytes, a few registers each.
constexpr int kInOrderBatch = 16;

// Calls fold(load(j)) for j = 0, 1, ..., count - 1, in that order, with the loads of kInOrderBatch
// consecutive j issued before their folds.
template <typename I, typename Load, typename Fold>
__device__ __forceinline__ void in_order(I count, Load load, Fold fold) {
    using V = decltype(load(I(0)));
    I j = 0;
    for (; j + kInOrderBatch <= count; j += kInOrderBatch) {
        V v[kInOrderBatch];
        SHARDLAB_UNROLL
        for (int b = 0; b < kInOrderBatch; ++b) v[b] = load(j + I(b));
        SHARDLAB_UNROLL
        for (int b = 0; b < kInOrderBatch; ++b) fold(v[b]);
    }
    for (; j < count; ++j) fold(load(j));
}

} // namespace shardlab::cuda
