// Sums and maxima across the 32 lanes of a warp (butterfly shuffles: every lane gets the result),
// and across a block.
// Included by .cu files only.
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

// Across a block of up to 1024 threads (a whole number of warps): every thread gets the result.
// shared: 32 floats of the caller's shared memory; every thread of the block must call.
__device__ __forceinline__ float block_sum(float v, float* shared) {
    const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
    const int warps = int(blockDim.x / 32);
    v = warp_sum(v);
    __syncthreads(); // shared may still be read by a previous call
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    return warp_sum(lane < warps ? shared[lane] : 0.0f);
}

__device__ __forceinline__ float block_max(float v, float* shared) {
    const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
    const int warps = int(blockDim.x / 32);
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    return warp_max(lane < warps ? shared[lane] : -INFINITY);
}

} // namespace shardlab::cuda
