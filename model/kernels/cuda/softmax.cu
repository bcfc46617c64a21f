// Attention's causal softmax and its backward, one warp per row of a T x T score matrix: row i
// keeps columns 0..i (the positions it may attend to); the rest of the row is written as zero.
// The row is walked in chunks of W = Packed<P>::size columns (row_chunks.h: 16-byte vectors where
// aligned, lane l taking chunks l, l + 32, ...), and what a lane read is kept in its shared-memory
// cache: the scores are read once, each exponential computed once.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/row_chunks.h"
#include "model/kernels/cuda/warp_reduce.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kWarpsPerBlock = 8;

template <typename P>
__global__ void causal_softmax_kernel(P* prob, const float* scores, std::size_t rows, int T,
                                      int levels) {
    constexpr int W = Packed<P>::size;
    SHARDLAB_DYNAMIC_SHARED(float, shared);
    const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
    const std::size_t row = std::size_t(blockIdx.x) * kWarpsPerBlock + warp;
    if (row >= rows) return;
    const LaneCache<W> cache{shared + std::size_t(warp) * levels * W * 32, levels};
    const int i = int(row % std::size_t(T)); // the query's position: columns 0..i
    const int L = i + 1, chunks = (L + W - 1) / W;
    const float* s = scores + row * T;
    float f[W];
    float maxv = -INFINITY;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        const int n = load_chunk(f, s, k * W, L);
        for (int e = 0; e < n; ++e) maxv = fmaxf(maxv, f[e]);
        if (cache.has(level)) cache.put(level, f);
    }
    maxv = warp_max(maxv);
    float sum = 0;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        if (cache.has(level))
            cache.get(level, f);
        else
            load_chunk(f, s, k * W, L);
        const int n = min(W, L - k * W);
        for (int e = 0; e < W; ++e) f[e] = e < n ? expf(f[e] - maxv) : 0.0f;
        for (int e = 0; e < n; ++e) sum += f[e];
        if (cache.has(level)) cache.put(level, f);
    }
    sum = warp_sum(sum);
    P* p = prob + row * T;
    for (int k = lane, level = 0; k * W < T; k += 32, ++level) {
        if (k < chunks) {
            if (cache.has(level)) {
                cache.get(level, f);
            } else {
                const int n = load_chunk(f, s, k * W, L);
                for (int e = 0; e < W; ++e) f[e] = e < n ? expf(f[e] - maxv) : 0.0f;
            }
            for (int e = 0; e < W; ++e) f[e] = k * W + e <= i ? f[e] / sum : 0.0f;
        } else {
            for (int e = 0; e < W; ++e) f[e] = 0.0f;
        }
        store_chunk(p, k * W, T, f);
    }
}

template <typename P>
__global__ void causal_softmax_backward_kernel(P* dscore, const float* dprob, const P* prob,
                                               std::size_t rows, int T, float scale, int levels) {
    constexpr int W = Packed<P>::size;
    SHARDLAB_DYNAMIC_SHARED(float, shared);
    const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
    const std::size_t row = std::size_t(blockIdx.x) * kWarpsPerBlock + warp;
    if (row >= rows) return;
    float* base = shared + std::size_t(warp) * levels * W * 32 * 2;
    const LaneCache<W> p_cache{base, levels}, dp_cache{base + levels * W * 32, levels};
    const int i = int(row % std::size_t(T));
    const int L = i + 1, chunks = (L + W - 1) / W;
    const float* dp = dprob + row * T;
    const P* p = prob + row * T;
    float pv[W], dv[W];
    float dot = 0; // sum_j p_j dp_j: the softmax's backward
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        const int n = load_chunk(pv, p, k * W, L);
        load_chunk(dv, dp, k * W, L);
        for (int e = 0; e < n; ++e) dot += pv[e] * dv[e];
        if (p_cache.has(level)) p_cache.put(level, pv), dp_cache.put(level, dv);
    }
    dot = warp_sum(dot);
    P* ds = dscore + row * T;
    for (int k = lane, level = 0; k * W < T; k += 32, ++level) {
        if (k < chunks) {
            if (p_cache.has(level)) {
                p_cache.get(level, pv), dp_cache.get(level, dv);
            } else {
                load_chunk(pv, p, k * W, L);
                load_chunk(dv, dp, k * W, L);
            }
            for (int e = 0; e < W; ++e)
                pv[e] = k * W + e <= i ? pv[e] * (dv[e] - dot) * scale : 0.0f;
        } else {
            for (int e = 0; e < W; ++e) pv[e] = 0.0f;
        }
        store_chunk(ds, k * W, T, pv);
    }
}
} // namespace

void causal_softmax(cudaStream_t s, void* prob, const float* scores, int matrices, int T, DType t) {
    const std::size_t rows = std::size_t(matrices) * T;
    if (rows == 0) return;
    dispatch(t, [&](auto tag) {
        using P = typename decltype(tag)::type;
        constexpr int W = Packed<P>::size;
        const int levels = row_cache_levels(T, W, 1, kWarpsPerBlock);
        launch("causal_softmax", causal_softmax_kernel<P>, blocks_for(rows, kWarpsPerBlock),
               kWarpsPerBlock * 32, row_cache_bytes(levels, W, 1, kWarpsPerBlock), s,
               static_cast<P*>(prob), scores, rows, T, levels);
    });
}

void causal_softmax_backward(cudaStream_t s, void* dscore, const float* dprob, const void* prob,
                             int matrices, int T, float scale, DType t) {
    const std::size_t rows = std::size_t(matrices) * T;
    if (rows == 0) return;
    dispatch(t, [&](auto tag) {
        using P = typename decltype(tag)::type;
        constexpr int W = Packed<P>::size;
        const int levels = row_cache_levels(T, W, 2, kWarpsPerBlock);
        launch("causal_softmax_backward", causal_softmax_backward_kernel<P>,
               blocks_for(rows, kWarpsPerBlock), kWarpsPerBlock * 32,
               row_cache_bytes(levels, W, 2, kWarpsPerBlock), s, static_cast<P*>(dscore), dprob,
               static_cast<const P*>(prob), rows, T, scale, levels);
    });
}

} // namespace shardlab::cuda
