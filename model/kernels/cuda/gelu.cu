// GELU (tanh form): loads widened to fp32, one rounding on store, 16-byte vectors where every
// pointer is aligned (packed.h; the tail and misaligned pointers element by element — the same
// arithmetic per element either way). The derivative is written out by hand, as on the CPU
// (model/kernels/cpu/gelu.cpp).
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
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

} // namespace shardlab::cuda
