// 16-byte vectors of a storage type (llm.c's x128): Packed<T> holds 16 / sizeof(T) elements, moved
// by one 16-byte load or store. A kernel uses them only where the address is 16-byte aligned (a GPU
// faults otherwise; the emulator reports it), and element by element elsewhere: a row whose length
// is not a multiple of the width, or that starts off the 16-byte grid. Which path a chunk takes
// never changes a result: sums run over the same elements in the same order either way.
// Included by .cu files only.
#pragma once

#include "core/cuda/element.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace shardlab::cuda {

template <typename T>
struct alignas(16) Packed {
    static constexpr int size = int(16 / sizeof(T));
    T v[size];
};

// Whether p is on the 16-byte grid (host and device).
__host__ __device__ __forceinline__ bool aligned16(const void* p) {
    return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

template <typename T>
__device__ __forceinline__ Packed<T> load_packed(const T* p) {
    const float4 bits = load4(reinterpret_cast<const float*>(p));
    Packed<T> r;
    memcpy(&r, &bits, sizeof(r));
    return r;
}

template <typename T>
__device__ __forceinline__ void store_packed(T* p, const Packed<T>& x) {
    float4 bits;
    memcpy(&bits, &x, sizeof(bits));
    store4(reinterpret_cast<float*>(p), bits);
}

// Grid-stride over the elements [0, n): fn(i, width) for each whole pack (i a multiple of the
// width, vector) when `vector`, then fn(i, 1) for each element of the tail — or for every element
// when not `vector` (a misaligned pointer).
template <int W, typename Fn>
__device__ __forceinline__ void for_each_pack(std::size_t n, bool vector, Fn&& fn) {
    const std::size_t first = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    const std::size_t packs = vector ? n / W : 0;
    for (std::size_t p = first; p < packs; p += stride) fn(p * W, W);
    for (std::size_t i = packs * W + first; i < n; i += stride) fn(i, 1);
}

} // namespace shardlab::cuda
