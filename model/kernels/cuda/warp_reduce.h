// Sums and maxima across the 32 lanes of a warp (butterfly shuffles: every lane gets the result),
// and across a block by a fixed tree. Included by .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace shardlab::cuda {

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

struct Plus {
    template <typename V>
    __device__ V operator()(V a, V b) const {
        return a + b;
    }
};
struct Max {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// The block's values reduced by a fixed tree — each warp by butterfly shuffles, then thread 0
// folds the warps' results in order — so the same values give the same bits (a double sum too).
// The result is thread 0's. Every thread of the block calls it, once per kernel (its shared
// slots are not fenced for reuse); kThreads is the block's size, a multiple of 32.
template <unsigned kThreads, typename V, typename Op>
__device__ V block_reduce(V v, Op op) {
    __shared__ V warps[kThreads / 32];
    for (int offset = 16; offset > 0; offset /= 2)
        v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0)
        for (unsigned w = 1; w < kThreads / 32; ++w) v = op(v, warps[w]);
    return v;
}

} // namespace shardlab::cuda
