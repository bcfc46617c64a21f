// Fused AdamW over a shard on the GPU: read the gradient, update master, m and v, write the 16-bit
// parameters — one pass, one thread per element, in the CPU update's order of operations
// (model/kernels/cpu/adamw.cpp), with fused multiply-adds disabled so both round alike.
#include "core/error.h"
#include "model/kernels/cuda/cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

namespace shardlab::cuda {

namespace {
__device__ float load_grad(const void* g, int type, std::size_t i) {
    if (type == 0) return static_cast<const float*>(g)[i];
    return __bfloat162float(static_cast<const __nv_bfloat16*>(g)[i]);
}

__global__ void adamw_kernel(float* p, float* m, float* v, const void* g, int grad_type,
                             void* params, int param_type, std::size_t n, AdamWStep k) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float gi = __fmul_rn(load_grad(g, grad_type, i), k.grad_scale);
    const float mi = __fadd_rn(__fmul_rn(k.b1, m[i]), __fmul_rn(1.0f - k.b1, gi));
    const float vi = __fadd_rn(__fmul_rn(k.b2, v[i]), __fmul_rn(__fmul_rn(1.0f - k.b2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    const float denom = __fadd_rn(__fmul_rn(__fsqrt_rn(vi), k.inv_bc2_sqrt), k.eps);
    const float w =
        __fsub_rn(__fmul_rn(p[i], k.keep), __fdiv_rn(__fmul_rn(k.step_size, mi), denom));
    p[i] = w;
    if (params == nullptr) return;
    if (param_type == 0)
        static_cast<float*>(params)[i] = w;
    else
        static_cast<__nv_bfloat16*>(params)[i] = __float2bfloat16_rn(w);
}

int type_code(DType t, const char* what) {
    if (t == DType::f32) return 0;
    if (t == DType::bf16) return 1;
    throw Error(std::string("CUDA AdamW: ") + what + " must be fp32 or bf16");
}
} // namespace

void adamw_update_fused(float* master, float* m, float* v, const void* grad, DType grad_type,
                        void* params, DType param_type, std::size_t n, const AdamWStep& k) {
    if (n == 0) return;
    adamw_kernel<<<unsigned((n + 255) / 256), 256>>>(master, m, v, grad,
                                                     type_code(grad_type, "gradients"), params,
                                                     type_code(param_type, "parameters"), n, k);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess)
        throw Error(std::string("adamw_update_fused failed: ") + cudaGetErrorString(e));
}

} // namespace shardlab::cuda
