// GELU on the GPU: one thread per element, loads widened to fp32, one rounding on store.
#include "core/error.h"
#include "model/kernels/cuda/cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>

namespace shardlab::cuda {

namespace {
__device__ float load(const float* p, std::size_t i) {
    return p[i];
}
__device__ float load(const __nv_bfloat16* p, std::size_t i) {
    return __bfloat162float(p[i]);
}
__device__ void store(float* p, std::size_t i, float v) {
    p[i] = v;
}
__device__ void store(__nv_bfloat16* p, std::size_t i, float v) {
    p[i] = __float2bfloat16_rn(v);
}

constexpr float kSqrt2OverPi = 0.7978845608028654f;

template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* in, std::size_t n) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = load(in, i);
    store(out, i, 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x))));
}

template <typename T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, std::size_t n) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = load(inp, i);
    const float u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
    const float t = tanhf(u);
    const float grad = 0.5f * (1.0f + t) +
                       0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x);
    store(dinp, i, grad * load(dout, i));
}

void check_launch(const char* what) {
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) throw Error(std::string(what) + " failed: " + cudaGetErrorString(e));
}

unsigned blocks(std::size_t n) {
    return unsigned((n + 255) / 256);
}
} // namespace

void gelu_forward(void* out, const void* in, std::size_t n, DType t) {
    if (n == 0) return;
    if (t == DType::bf16)
        gelu_forward_kernel<<<blocks(n), 256>>>(static_cast<__nv_bfloat16*>(out),
                                                static_cast<const __nv_bfloat16*>(in), n);
    else if (t == DType::f32)
        gelu_forward_kernel<<<blocks(n), 256>>>(static_cast<float*>(out),
                                                static_cast<const float*>(in), n);
    else
        throw Error("CUDA gelu_forward supports fp32 and bf16");
    check_launch("gelu_forward");
}

void gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, DType t) {
    if (n == 0) return;
    if (t == DType::bf16)
        gelu_backward_kernel<<<blocks(n), 256>>>(static_cast<__nv_bfloat16*>(dinp),
                                                 static_cast<const __nv_bfloat16*>(inp),
                                                 static_cast<const __nv_bfloat16*>(dout), n);
    else if (t == DType::f32)
        gelu_backward_kernel<<<blocks(n), 256>>>(static_cast<float*>(dinp),
                                                 static_cast<const float*>(inp),
                                                 static_cast<const float*>(dout), n);
    else
        throw Error("CUDA gelu_backward supports fp32 and bf16");
    check_launch("gelu_backward");
}

} // namespace shardlab::cuda
