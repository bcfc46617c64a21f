// RMSNorm (Llama's, issue 25; the CPU twin is model/kernels/cpu/rmsnorm.cpp): one warp per row, as
// layernorm.cu — the row walked in 16-byte chunks (row_chunks.h), the sum of squares and backward's
// dot product summed across lanes by a butterfly, the row kept in a lane-private shared-memory
// cache so global memory is read once per row (twice for rows longer than the cache). Every
// element's arithmetic is the CPU's expression in the CPU's order, so the only difference from it
// is the order of those two row sums. dweight is a column sum, one thread per column walking its
// chunk of rows in order (column_sums.cu's scheme, no atomics): the CPU's order, and so its bits,
// when the rows fit one chunk.
//   y = w * (x * r), r = 1 / sqrt(mean(x^2) + eps)
//   dx += r * w * dy - x * r^3 * mean(w * dy * x)          dw += sum over rows of dy * x * r
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/column_chunk.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/row_chunks.h"
#include "model/kernels/cuda/warp_reduce.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kWarpsPerBlock = 8;

template <typename T>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* in, const T* weight, int N,
                                       int C, float eps, int levels) {
    constexpr int W = Packed<T>::size;
    SHARDLAB_DYNAMIC_SHARED(float, shared);
    const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
    const int row = int(blockIdx.x * kWarpsPerBlock) + warp;
    if (row >= N) return; // a whole warp leaves together
    const LaneCache<W> cache{shared + std::size_t(warp) * levels * W * 32, levels};
    const T* x = in + std::size_t(row) * C;
    const int chunks = (C + W - 1) / W;
    float f[W];
    float squares = 0;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        const int n = load_chunk(f, x, k * W, C);
        for (int e = 0; e < n; ++e) squares += f[e] * f[e];
        if (cache.has(level)) cache.put(level, f);
    }
    const float r = 1.0f / sqrtf(warp_sum(squares) / float(C) + eps);
    T* y = out + std::size_t(row) * C;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        if (cache.has(level))
            cache.get(level, f);
        else
            load_chunk(f, x, k * W, C);
        float w[W];
        load_chunk(w, weight, k * W, C);
        for (int e = 0; e < W; ++e) f[e] = w[e] * (f[e] * r);
        store_chunk(y, k * W, C, f);
    }
    if (lane == 0) rstd[row] = r;
}

// din += the input gradient; the row's x and dout cached between the two passes (the weight,
// shared by every row, is read again).
template <typename T>
__global__ void rmsnorm_backward_input_kernel(T* din, const T* dout, const T* in, const T* weight,
                                              const float* rstd, int N, int C, int levels) {
    constexpr int W = Packed<T>::size;
    SHARDLAB_DYNAMIC_SHARED(float, shared);
    const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
    const int row = int(blockIdx.x * kWarpsPerBlock) + warp;
    if (row >= N) return;
    float* base = shared + std::size_t(warp) * levels * W * 32 * 2;
    const LaneCache<W> x_cache{base, levels}, dy_cache{base + levels * W * 32, levels};
    const T* xrow = in + std::size_t(row) * C;
    const T* dyrow = dout + std::size_t(row) * C;
    const float r = rstd[row];
    const int chunks = (C + W - 1) / W;
    float dot = 0; // sum of w * dy * x
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        float x[W], dy[W], w[W];
        const int n = load_chunk(x, xrow, k * W, C);
        load_chunk(dy, dyrow, k * W, C);
        load_chunk(w, weight, k * W, C);
        for (int e = 0; e < n; ++e) dot += w[e] * dy[e] * x[e];
        if (x_cache.has(level)) x_cache.put(level, x), dy_cache.put(level, dy);
    }
    const float mean_dot = warp_sum(dot) / float(C);
    T* dx = din + std::size_t(row) * C;
    for (int k = lane, level = 0; k < chunks; k += 32, ++level) {
        float x[W], dy[W], w[W], g[W];
        if (x_cache.has(level)) {
            x_cache.get(level, x), dy_cache.get(level, dy);
        } else {
            load_chunk(x, xrow, k * W, C);
            load_chunk(dy, dyrow, k * W, C);
        }
        load_chunk(w, weight, k * W, C);
        load_chunk(g, dx, k * W, C);
        for (int e = 0; e < W; ++e) g[e] = g[e] + (r * w[e] * dy[e] - x[e] * r * r * r * mean_dot);
        store_chunk(dx, k * W, C, g);
    }
}

// dweight's partial column sums over one chunk of rows, in row order (column_chunk.h).
template <typename T>
__global__ void rmsnorm_weight_partials_kernel(float* partials, const T* dout, const T* in,
                                               const float* rstd, int N, int C) {
    const ColumnChunk chunk = ColumnChunk::mine(N);
    if (chunk.c >= C) return;
    struct Row {
        T dy, x;
        float rstd;
    };
    float dw = 0;
    chunk.walk(
        C,
        [&](int r, std::size_t i) {
            return Row{dout[i], in[i], rstd[r]};
        },
        [&](const Row& row) { dw += to_f32(row.dy) * to_f32(row.x) * row.rstd; });
    partials[chunk.partial(C)] = dw;
}
} // namespace

void rmsnorm_forward(cudaStream_t s, void* out, float* rstd, const void* in, const void* weight,
                     int N, int C, float eps, DType t) {
    if (N == 0 || C == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        constexpr int W = Packed<T>::size;
        const int levels = row_cache_levels(C, W, 1, kWarpsPerBlock);
        launch("rmsnorm_forward", rmsnorm_forward_kernel<T>,
               blocks_for(std::size_t(N), kWarpsPerBlock), kWarpsPerBlock * 32,
               row_cache_bytes(levels, W, 1, kWarpsPerBlock), s, static_cast<T*>(out), rstd,
               static_cast<const T*>(in), static_cast<const T*>(weight), N, C, eps, levels);
    });
}

void rmsnorm_backward(cudaStream_t s, void* din, void* dweight, const void* dout, const void* in,
                      const void* weight, const float* rstd, int N, int C, DType t,
                      float* partials) {
    if (N == 0 || C == 0) return;
    const int chunks = column_chunks(N);
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        constexpr int W = Packed<T>::size;
        const int levels = row_cache_levels(C, W, 2, kWarpsPerBlock);
        launch("rmsnorm_backward_input", rmsnorm_backward_input_kernel<T>,
               blocks_for(std::size_t(N), kWarpsPerBlock), kWarpsPerBlock * 32,
               row_cache_bytes(levels, W, 2, kWarpsPerBlock), s, static_cast<T*>(din),
               static_cast<const T*>(dout), static_cast<const T*>(in),
               static_cast<const T*>(weight), rstd, N, C, levels);
        launch("rmsnorm_weight_partials", rmsnorm_weight_partials_kernel<T>,
               column_chunk_grid(N, C), kColumnThreads, 0, s, partials, static_cast<const T*>(dout),
               static_cast<const T*>(in), rstd, N, C);
    });
    add_column_partials(s, dweight, partials, chunks, C, t);
}

} // namespace shardlab::cuda
