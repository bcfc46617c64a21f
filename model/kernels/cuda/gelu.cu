// GELU (tanh form), one thread per element: loads widened to fp32, one rounding on store. The
// derivative is written out by hand, as on the CPU (model/kernels/cpu/gelu.cpp).
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"

namespace shardlab::cuda {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr unsigned kThreads = 256;

template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* in, std::size_t n) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = to_f32(in[i]);
    out[i] = from_f32<T>(0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x))));
}

template <typename T>
__global__ void gelu_backward_kernel(T* din, const T* in, const T* dout, std::size_t n) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = to_f32(in[i]);
    const float t = tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x));
    const float sech2 = 1.0f - t * t;
    const float grad =
        0.5f * (1.0f + t) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + float(3 * 0.044715) * x * x);
    din[i] = from_f32<T>(grad * to_f32(dout[i]));
}
} // namespace

void gelu_forward(cudaStream_t s, void* out, const void* in, std::size_t n, DType t) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("gelu_forward", gelu_forward_kernel<T>, blocks_for(n, kThreads), kThreads, 0, s,
               static_cast<T*>(out), static_cast<const T*>(in), n);
    });
}

void gelu_backward(cudaStream_t s, void* din, const void* in, const void* dout, std::size_t n,
                   DType t) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("gelu_backward", gelu_backward_kernel<T>, blocks_for(n, kThreads), kThreads, 0, s,
               static_cast<T*>(din), static_cast<const T*>(in), static_cast<const T*>(dout), n);
    });
}

} // namespace shardlab::cuda
