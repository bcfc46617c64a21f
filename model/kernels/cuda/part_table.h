// A launch over several tensors at once (the gradient norm's parts: squared_norm.cu; AdamW's
// tensors: adamw.cu) takes their table by value as the kernel's argument: up to a fixed number of
// entries (`part`, `count`), each holding the first block of the grid that is its own
// (`first_block`). One launch instead of one per tensor: most of a step's tensors are small, and
// their launches would cost more than their work. Included by .cu files only.
#pragma once

#include <cuda_runtime.h>

namespace shardlab::cuda {

// The entry this block belongs to: the last whose first block is at or before it.
template <typename Table>
__device__ __forceinline__ int part_of_block(const Table& table) {
    int p = 0;
    while (p + 1 < table.count && table.part[p + 1].first_block <= blockIdx.x) ++p;
    return p;
}

} // namespace shardlab::cuda
