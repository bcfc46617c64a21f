// Fused AdamW over a shard: read the gradient, update master, m and v, write the parameters in
// their dtype — one pass, one thread per element, in the CPU update's order of operations
// (model/kernels/adamw_step.h). IEEE add, multiply, divide and square root are correctly rounded
// on both, and neither fuses multiply-adds, so the two produce the same bits.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;

template <typename G, typename P>
__global__ void adamw_kernel(float* w, float* m, float* v, const G* g, P* params, std::size_t n,
                             AdamWStep k) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float gi = __fmul_rn(to_f32(g[i]), k.grad_scale);
    const float mi = __fadd_rn(__fmul_rn(k.b1, m[i]), __fmul_rn(1.0f - k.b1, gi));
    const float vi = __fadd_rn(__fmul_rn(k.b2, v[i]), __fmul_rn(__fmul_rn(1.0f - k.b2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    const float denom = __fadd_rn(__fmul_rn(__fsqrt_rn(vi), k.inv_bc2_sqrt), k.eps);
    const float wi =
        __fsub_rn(__fmul_rn(w[i], k.keep), __fdiv_rn(__fmul_rn(k.step_size, mi), denom));
    w[i] = wi;
    if (params) params[i] = from_f32<P>(wi);
}
} // namespace

void adamw(cudaStream_t s, float* master, float* m, float* v, const void* grad, DType grad_type,
           void* params, DType param_type, std::size_t n, const AdamWStep& k) {
    if (n == 0) return;
    dispatch(grad_type, [&](auto gtag) {
        dispatch(param_type, [&](auto ptag) {
            using G = typename decltype(gtag)::type;
            using P = typename decltype(ptag)::type;
            launch("adamw", adamw_kernel<G, P>, blocks_for(n, kThreads), kThreads, 0, s, master, m,
                   v, static_cast<const G*>(grad), static_cast<P*>(params), n, k);
        });
    });
}

} // namespace shardlab::cuda
