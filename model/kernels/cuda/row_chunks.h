// A row of C elements as a warp walks it: chunks of W = Packed<T>::size columns, lane l taking
// chunks l, l + 32, l + 64, ... and each chunk's elements in order — so a lane's partial sums have
// one fixed order whatever the alignment: a chunk moves as one 16-byte vector when it is whole and
// on the 16-byte grid, element by element otherwise (a row of a length no width divides, a
// misaligned pointer). And a lane-private cache of a row's values in shared memory ([level][element
// of chunk][lane]: no bank conflicts, no barriers) so a row kernel reads global memory once; the
// levels that do not fit are read again from global memory instead. Included by .cu files only.
#pragma once

#include "core/cuda/element.h"
#include "model/kernels/cuda/packed.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace shardlab::cuda {

// Loads the chunk of W columns at c0 into f when it is whole and on the 16-byte grid (the caller
// knows): 16-byte loads only. W is a whole number of T's packs.
template <typename T, int W>
__device__ __forceinline__ void load_whole_chunk(float (&f)[W], const T* row, int c0) {
    constexpr int P = Packed<T>::size;
    static_assert(W % P == 0, "a chunk is whole packs");
    for (int q = 0; q < W; q += P) {
        const Packed<T> p = load_packed(row + c0 + q);
        for (int e = 0; e < P; ++e) f[q + e] = to_f32(p.v[e]);
    }
}

// Loads the chunk of W columns at c0 into f (zeros past the row's end); returns its valid
// elements. W is a whole number of T's packs.
template <typename T, int W>
__device__ __forceinline__ int load_chunk(float (&f)[W], const T* row, int c0, int C) {
    const int n = min(W, C - c0);
    if (n == W && aligned16(row + c0)) {
        load_whole_chunk(f, row, c0);
    } else {
        for (int e = 0; e < W; ++e) f[e] = e < n ? to_f32(row[c0 + e]) : 0.0f;
    }
    return n;
}

// The chunk of W = Packed<T>::size columns at c0 as stored, zeros past the row's end C: one
// 16-byte load where whole and aligned, element by element otherwise. n: its valid columns.
template <typename T>
__device__ __forceinline__ Packed<T> load_stored_chunk(const T* row, int c0, int C, int& n) {
    constexpr int W = Packed<T>::size;
    n = min(W, C - c0);
    if (n == W && aligned16(row + c0)) return load_packed(row + c0);
    Packed<T> p;
    for (int e = 0; e < W; ++e) p.v[e] = e < n ? row[c0 + e] : from_f32<T>(0.0f);
    return p;
}

// Copies the chunk of W = Packed<T>::size columns at c0 from src to dst as stored (no conversion:
// every bit, NaN payloads included), 16 bytes at once where whole and aligned on both sides.
template <typename T>
__device__ __forceinline__ void copy_chunk(T* dst, const T* src, int c0, int C) {
    constexpr int W = Packed<T>::size;
    if (c0 + W <= C && aligned16(dst + c0) && aligned16(src + c0)) {
        store_packed(dst + c0, load_packed(src + c0));
    } else {
        for (int c = c0; c < min(c0 + W, C); ++c) dst[c] = src[c];
    }
}

// Stores the chunk's valid elements at column c0, each rounded once.
template <typename T, int W>
__device__ __forceinline__ void store_chunk(T* row, int c0, int C, const float (&f)[W]) {
    constexpr int P = Packed<T>::size;
    static_assert(W % P == 0, "a chunk is whole packs");
    const int n = min(W, C - c0);
    if (n == W && aligned16(row + c0)) {
        for (int q = 0; q < W; q += P) {
            Packed<T> p;
            for (int e = 0; e < P; ++e) p.v[e] = from_f32<T>(f[q + e]);
            store_packed(row + c0 + q, p);
        }
    } else {
        for (int e = 0; e < n; ++e) row[c0 + e] = from_f32<T>(f[e]);
    }
}

// One warp's cache: `levels` chunks per lane (level i holds the lane's i-th chunk).
template <int W>
struct LaneCache {
    float* base; // levels * W * 32 floats
    int levels;
    __device__ __forceinline__ bool has(int level) const { return level < levels; }
    __device__ __forceinline__ void put(int level, const float (&f)[W]) const {
        const int lane = int(threadIdx.x % 32);
        for (int e = 0; e < W; ++e) base[(std::size_t(level) * W + e) * 32 + lane] = f[e];
    }
    __device__ __forceinline__ void get(int level, float (&f)[W]) const {
        const int lane = int(threadIdx.x % 32);
        for (int e = 0; e < W; ++e) f[e] = base[(std::size_t(level) * W + e) * 32 + lane];
    }
};

// Shared memory a block may use for its warps' caches: within the default 48 KiB per block.
constexpr std::size_t kRowCacheBytes = std::size_t(32) << 10;

// Levels per lane to cache for rows of C elements, `arrays` floats per element, `warps` per block.
inline int row_cache_levels(int C, int W, int arrays, int warps) {
    const int needed = ((C + W - 1) / W + 31) / 32;
    const std::size_t per_level = std::size_t(warps) * W * 32 * sizeof(float) * arrays;
    const int fits = int(kRowCacheBytes / per_level);
    return needed < fits ? needed : fits;
}
inline std::size_t row_cache_bytes(int levels, int W, int arrays, int warps) {
    return std::size_t(levels) * warps * W * 32 * sizeof(float) * arrays;
}

} // namespace shardlab::cuda
