// The column sums' unit of work (column_sums.cu): a thread owns one column of one chunk of
// kColumnChunkRows rows and walks the chunk's rows in order, its loads issued ahead (in_order.h);
// neighbouring threads take neighbouring columns, so every row is read coalesced. The kernels that
// take a column sum on their way share the walk — the bias gradients, the norms' parameter
// gradients, the GELU backward's bias gradient — so each of their sums has the one order that
// add_column_partials completes and the tests model (tests/cuda_twin.h, chunked_column_sum).
// Included by .cu files only.
#pragma once

#include "core/cuda/launch.h"
#include "model/kernels/cuda/in_order.h"
#include "model/kernels/cuda/kernels.h"

#include <cstddef>

namespace shardlab::cuda {

constexpr unsigned kColumnThreads = 128;

// The grid of a column-chunk kernel: blocks of kColumnThreads columns, one row of blocks per chunk.
inline dim3 column_chunk_grid(int rows, int cols) {
    return {unsigned(blocks_for(std::size_t(cols), kColumnThreads)), unsigned(column_chunks(rows))};
}

// This thread's column c and its block's chunk of rows [first, last); c >= cols past the last
// column (the thread then has nothing to do). The grid's rows of blocks take the chunks from the
// last: a GPU starts blocks in about the order of their index, so the rows a row kernel just
// walked in order (the LayerNorm and RMSNorm backward's din, right before their parameter
// gradients) are read while L2 still holds them. Which block takes a chunk changes no bits.
struct ColumnChunk {
    int c, first, last, chunk;

    __device__ static ColumnChunk mine(int rows) {
        const int chunk = int(gridDim.y - 1 - blockIdx.y);
        const int first = chunk * kColumnChunkRows;
        return {int(blockIdx.x * blockDim.x + threadIdx.x), first,
                rows - first < kColumnChunkRows ? rows : first + kColumnChunkRows, chunk};
    }
    // Calls fold(load(r, i)) for the chunk's rows r in order, i = r * cols + c being the element
    // of this column, the loads of kInOrderBatch rows issued before their folds.
    template <typename Load, typename Fold>
    __device__ void walk(int cols, Load load, Fold fold) const {
        in_order(
            last - first,
            [&](int j) {
                const int r = first + j;
                return load(r, std::size_t(r) * cols + c);
            },
            fold);
    }
    // Where the chunk's partial of this column goes in partials [chunks, cols] (`set`: the n-th
    // [chunks, cols] block of them, for a kernel that takes several sums).
    __device__ std::size_t partial(int cols, int set = 0) const {
        return (std::size_t(set) * gridDim.y + chunk) * cols + c;
    }
};

} // namespace shardlab::cuda
