// LayerNorm: one warp per row for the statistics, the normalisation and din, walking the row in
// 16-byte chunks (row_chunks.h: lane l takes chunks l, l + 32, ..., a butterfly sum across lanes)
// and keeping what it read in a lane-private shared-memory cache, so global memory is read once
// per row (twice only for rows too long for the cache). The fused residual form adds the residual
// branch first, rounding and storing the sum as the separate add does, and normalises the rounded
// values: the bits of accumulate + layernorm_forward. dweight and dbias are column sums, one thread
// per column walking its chunk of rows in order (column_chunk.h): the CPU's order, and so its bits,
// when the rows fit one chunk.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/column_chunk.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/row_chunks.h"
#include "model/kernels/cuda/warp_reduce.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kWarpsPerBlock = 8;

// kResidual: `in` is the residual stream, which gets += x (rounded) before it is normalised.
template <typename T, bool kResidual>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, T* in, const T* x,
                                         const T* weight, const T* bias, int N, int C, int levels) {
    constexpr int W = Packed<T>::size;
    SHARDLAB_DYNAMIC_SHARED(float, shared);
    const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
    const int row = int(blockIdx.x * kWarpsPerBlock) + warp;
    if (row >= N) return; // a whole warp leaves together
    const LaneCache<W> cache{shared + std::size_t(warp) * levels * W * 32, levels};
    T* r = in + std::size_t(row) * C;
    const int chunks = (C + W - 1) / W;
    float f[W];
    float sum = 0;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        const int n = load_chunk(f, r, k * W, C);
        if constexpr (kResidual) {
            float g[W];
            load_chunk(g, x + std::size_t(row) * C, k * W, C);
            for (int e = 0; e < W; ++e) f[e] = to_f32(from_f32<T>(f[e] + g[e]));
            store_chunk(r, k * W, C, f);
        }
        for (int e = 0; e < n; ++e) sum += f[e];
        if (cache.has(level)) cache.put(level, f);
    }
    const float m = warp_sum(sum) / float(C);
    float var = 0;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        int n = min(W, C - k * W);
        if (cache.has(level))
            cache.get(level, f);
        else
            n = load_chunk(f, r, k * W, C); // this lane's own store, if residual
        for (int e = 0; e < n; ++e) {
            const float d = f[e] - m;
            var += d * d;
        }
    }
    const float s = 1.0f / sqrtf(warp_sum(var) / float(C) + 1e-5f);
    T* y = out + std::size_t(row) * C;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        if (cache.has(level))
            cache.get(level, f);
        else
            load_chunk(f, r, k * W, C);
        float w[W], b[W];
        load_chunk(w, weight, k * W, C);
        load_chunk(b, bias, k * W, C);
        for (int e = 0; e < W; ++e) f[e] = (f[e] - m) * s * w[e] + b[e];
        store_chunk(y, k * W, C, f);
    }
    if (lane == 0) mean[row] = m, rstd[row] = s;
}

// din += the input gradient; the row's xhat and weight * dout cached between the two passes.
template <typename T>
__global__ void layernorm_backward_input_kernel(T* din, const T* dout, const T* in, const T* weight,
                                                const float* mean, const float* rstd, int N, int C,
                                                int levels) {
    constexpr int W = Packed<T>::size;
    SHARDLAB_DYNAMIC_SHARED(float, shared);
    const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
    const int row = int(blockIdx.x * kWarpsPerBlock) + warp;
    if (row >= N) return;
    float* base = shared + std::size_t(warp) * levels * W * 32 * 2;
    const LaneCache<W> xhat_cache{base, levels}, dnorm_cache{base + levels * W * 32, levels};
    const T* x = in + std::size_t(row) * C;
    const T* dy = dout + std::size_t(row) * C;
    const float m = mean[row], s = rstd[row];
    const int chunks = (C + W - 1) / W;
    // One chunk's xhat and dnorm = weight * dout, from global memory.
    auto terms = [&](int k, float(&xhat)[W], float(&dnorm)[W]) {
        float w[W];
        load_chunk(xhat, x, k * W, C);
        load_chunk(w, weight, k * W, C);
        load_chunk(dnorm, dy, k * W, C);
        for (int e = 0; e < W; ++e) xhat[e] = (xhat[e] - m) * s, dnorm[e] = w[e] * dnorm[e];
    };
    float dnorm_sum = 0, dnorm_xhat_sum = 0;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        float xhat[W], dnorm[W];
        terms(k, xhat, dnorm);
        for (int e = 0; e < min(W, C - k * W); ++e) {
            dnorm_sum += dnorm[e];
            dnorm_xhat_sum += dnorm[e] * xhat[e];
        }
        if (xhat_cache.has(level)) xhat_cache.put(level, xhat), dnorm_cache.put(level, dnorm);
    }
    const float dnorm_mean = warp_sum(dnorm_sum) / float(C);
    const float dnorm_xhat_mean = warp_sum(dnorm_xhat_sum) / float(C);
    T* dx = din + std::size_t(row) * C;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        float xhat[W], dnorm[W], g[W];
        if (xhat_cache.has(level))
            xhat_cache.get(level, xhat), dnorm_cache.get(level, dnorm);
        else
            terms(k, xhat, dnorm);
        load_chunk(g, dx, k * W, C);
        for (int e = 0; e < W; ++e)
            g[e] = g[e] + (dnorm[e] - dnorm_mean - xhat[e] * dnorm_xhat_mean) * s;
        store_chunk(dx, k * W, C, g);
    }
}

// The parameter gradients' partial column sums over one chunk of rows (column_chunk.h): dweight's
// partials first, then dbias's.
template <typename T>
__global__ void layernorm_params_partials_kernel(float* partials, const T* dout, const T* in,
                                                 const float* mean, const float* rstd, int N,
                                                 int C) {
    const ColumnChunk chunk = ColumnChunk::mine(N);
    if (chunk.c >= C) return;
    struct Row {
        T dy, x;
        float mean, rstd;
    };
    float dw = 0, db = 0;
    chunk.walk(
        C,
        [&](int r, std::size_t i) {
            return Row{dout[i], in[i], mean[r], rstd[r]};
        },
        [&](const Row& row) {
            const float dy = to_f32(row.dy);
            dw += dy * (to_f32(row.x) - row.mean) * row.rstd;
            db += dy;
        });
    partials[chunk.partial(C)] = dw;
    partials[chunk.partial(C, 1)] = db;
}

template <bool kResidual>
void launch_layernorm_forward(cudaStream_t s, void* out, float* mean, float* rstd, void* in,
                              const void* x, const void* weight, const void* bias, int N, int C,
                              DType t) {
    if (N == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        constexpr int W = Packed<T>::size;
        const int levels = row_cache_levels(C, W, 1, kWarpsPerBlock);
        launch(kResidual ? "residual_layernorm_forward" : "layernorm_forward",
               layernorm_forward_kernel<T, kResidual>, blocks_for(std::size_t(N), kWarpsPerBlock),
               kWarpsPerBlock * 32, row_cache_bytes(levels, W, 1, kWarpsPerBlock), s,
               static_cast<T*>(out), mean, rstd, static_cast<T*>(in), static_cast<const T*>(x),
               static_cast<const T*>(weight), static_cast<const T*>(bias), N, C, levels);
    });
}
} // namespace

void layernorm_forward(cudaStream_t s, void* out, float* mean, float* rstd, const void* in,
                       const void* weight, const void* bias, int N, int C, DType t) {
    // Not residual: the kernel only reads `in`.
    launch_layernorm_forward<false>(s, out, mean, rstd, const_cast<void*>(in), nullptr, weight,
                                    bias, N, C, t);
}

void residual_layernorm_forward(cudaStream_t s, void* residual, const void* x, void* out,
                                float* mean, float* rstd, const void* weight, const void* bias,
                                int N, int C, DType t) {
    launch_layernorm_forward<true>(s, out, mean, rstd, residual, x, weight, bias, N, C, t);
}

void layernorm_backward(cudaStream_t s, void* din, void* dweight, void* dbias, const void* dout,
                        const void* in, const void* weight, const float* mean, const float* rstd,
                        int N, int C, DType t, float* partials) {
    if (N == 0) return;
    const int chunks = column_chunks(N);
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        constexpr int W = Packed<T>::size;
        const int levels = row_cache_levels(C, W, 2, kWarpsPerBlock);
        launch("layernorm_backward_input", layernorm_backward_input_kernel<T>,
               blocks_for(std::size_t(N), kWarpsPerBlock), kWarpsPerBlock * 32,
               row_cache_bytes(levels, W, 2, kWarpsPerBlock), s, static_cast<T*>(din),
               static_cast<const T*>(dout), static_cast<const T*>(in),
               static_cast<const T*>(weight), mean, rstd, N, C, levels);
        launch("layernorm_params_partials", layernorm_params_partials_kernel<T>,
               column_chunk_grid(N, C), kColumnThreads, 0, s, partials, static_cast<const T*>(dout),
               static_cast<const T*>(in), mean, rstd, N, C);
    });
    add_column_partials(s, dweight, partials, chunks, C, t);
    add_column_partials(s, dbias, partials + std::size_t(chunks) * C, chunks, C, t);
}

} // namespace shardlab::cuda
