// GELU (tanh form): loads widened to fp32, one rounding on store, 16-byte vectors where every
// pointer is aligned (packed.h; the tail and misaligned pointers element by element — the same
// arithmetic per element either way). The derivative is written out by hand, as on the CPU
// (model/kernels/cpu/gelu.cpp). The backward can also take the bias gradient of the linear
// before it in the same pass (gelu_backward_bias_grad): column_sums.cu's order of sums.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/column_chunk.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/packed.h"

namespace shardlab::cuda {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr unsigned kThreads = 256;

__device__ __forceinline__ float gelu(float x) {
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ float gelu_grad(float x, float dy) {
    const float t = tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x));
    const float sech2 = 1.0f - t * t;
    const float grad =
        0.5f * (1.0f + t) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + float(3 * 0.044715) * x * x);
    return grad * dy;
}

unsigned grid_for(std::size_t n, int width) {
    return unsigned(std::min<std::size_t>(blocks_for(n / width + width, kThreads), 65535));
}

template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* in, std::size_t n, bool vector) {
    for_each_pack<Packed<T>::size>(n, vector, [&](std::size_t i, int width) {
        if (width == 1) {
            out[i] = from_f32<T>(gelu(to_f32(in[i])));
            return;
        }
        Packed<T> p = load_packed(in + i);
        for (int e = 0; e < Packed<T>::size; ++e) p.v[e] = from_f32<T>(gelu(to_f32(p.v[e])));
        store_packed(out + i, p);
    });
}

template <typename T>
__global__ void gelu_backward_kernel(T* din, const T* in, const T* dout, std::size_t n,
                                     bool vector) {
    for_each_pack<Packed<T>::size>(n, vector, [&](std::size_t i, int width) {
        if (width == 1) {
            din[i] = from_f32<T>(gelu_grad(to_f32(in[i]), to_f32(dout[i])));
            return;
        }
        const Packed<T> x = load_packed(in + i);
        Packed<T> d = load_packed(dout + i);
        for (int e = 0; e < Packed<T>::size; ++e)
            d.v[e] = from_f32<T>(gelu_grad(to_f32(x.v[e]), to_f32(d.v[e])));
        store_packed(din + i, d);
    });
}

// The GELU backward of one chunk of rows fused with its bias-gradient partials (column_chunk.h):
// a thread a column, walking the chunk's rows in order, g = gelu'(pre) * grad rounded to T,
// stored, and its value added to the column's partial — what gelu_backward_kernel stores and
// column_partials_kernel then sums, in the same order.
template <typename T>
__global__ void gelu_backward_partials_kernel(T* grad, float* partials, const T* pre, int rows,
                                              int cols) {
    const ColumnChunk chunk = ColumnChunk::mine(rows);
    if (chunk.c >= cols) return;
    struct Element {
        T x, dy;
        std::size_t at;
    };
    float s = 0;
    chunk.walk(
        cols,
        [&](int, std::size_t i) {
            return Element{pre[i], grad[i], i};
        },
        [&](Element e) {
            const T g = from_f32<T>(gelu_grad(to_f32(e.x), to_f32(e.dy)));
            grad[e.at] = g;
            s += to_f32(g);
        });
    partials[chunk.partial(cols)] = s;
}
} // namespace

void gelu_forward(cudaStream_t s, void* out, const void* in, std::size_t n, DType t) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const bool vector = aligned16(out) && aligned16(in);
        launch("gelu_forward", gelu_forward_kernel<T>, grid_for(n, vector ? Packed<T>::size : 1),
               kThreads, 0, s, static_cast<T*>(out), static_cast<const T*>(in), n, vector);
    });
}

void gelu_backward(cudaStream_t s, void* din, const void* in, const void* dout, std::size_t n,
                   DType t) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const bool vector = aligned16(din) && aligned16(in) && aligned16(dout);
        launch("gelu_backward", gelu_backward_kernel<T>, grid_for(n, vector ? Packed<T>::size : 1),
               kThreads, 0, s, static_cast<T*>(din), static_cast<const T*>(in),
               static_cast<const T*>(dout), n, vector);
    });
}

void gelu_backward_bias_grad(cudaStream_t s, void* grad, void* dbias, const void* pre, int rows,
                             int cols, DType t, float* partials) {
    if (rows == 0 || cols == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("gelu_backward_partials", gelu_backward_partials_kernel<T>,
               column_chunk_grid(rows, cols), kColumnThreads, 0, s, static_cast<T*>(grad), partials,
               static_cast<const T*>(pre), rows, cols);
    });
    add_column_partials(s, dbias, partials, column_chunks(rows), cols, t);
}

} // namespace shardlab::cuda
