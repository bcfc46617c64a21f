// Fused AdamW over a shard's tensors: read the gradient, update master, m and v, write the
// parameters in their dtype — one pass, one thread per element, in the CPU update's order of
// operations (model/kernels/adamw_step.h). IEEE add, multiply, divide and square root are correctly
// rounded on both, and neither fuses multiply-adds, so the two produce the same bits.
//
// The tensors go kAdamWParts to a launch, their table passed by value as the kernel's argument
// (part_table.h, as the gradient norm's parts): a GPT-2 step's 111 tensors are 4 launches, where
// a launch each cost the second lease 1.72 ms for 148 of them, against 1.28 ms of traffic and
// launches by the paper model.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/error.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/part_table.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;
constexpr int kAdamWParts = 32;

struct AdamWPart {
    float *w, *m, *v;
    const void* g;
    void* params;
    std::size_t n;
    unsigned first_block; // of this launch's grid
    AdamWStep k;
};
struct AdamWParts {
    AdamWPart part[kAdamWParts];
    int count;
};

template <typename G, typename P>
__device__ __forceinline__ void update(const AdamWPart& a, std::size_t i) {
    const AdamWStep& k = a.k;
    const float gi = __fmul_rn(to_f32(static_cast<const G*>(a.g)[i]), k.grad_scale);
    const float mi = __fadd_rn(__fmul_rn(k.b1, a.m[i]), __fmul_rn(1.0f - k.b1, gi));
    const float vi = __fadd_rn(__fmul_rn(k.b2, a.v[i]), __fmul_rn(__fmul_rn(1.0f - k.b2, gi), gi));
    a.m[i] = mi;
    a.v[i] = vi;
    const float denom = __fadd_rn(__fmul_rn(__fsqrt_rn(vi), k.inv_bc2_sqrt), k.eps);
    const float wi =
        __fsub_rn(__fmul_rn(a.w[i], k.keep), __fdiv_rn(__fmul_rn(k.step_size, mi), denom));
    a.w[i] = wi;
    if (a.params) static_cast<P*>(a.params)[i] = from_f32<P>(wi);
}

// One block per (part, 256 of its elements).
template <typename G, typename P>
__global__ void adamw_kernel(AdamWParts parts) {
    const AdamWPart& a = parts.part[part_of_block(parts)];
    const std::size_t i = std::size_t(blockIdx.x - a.first_block) * kThreads + threadIdx.x;
    if (i < a.n) update<G, P>(a, i);
}

// Launches a table of parts of one grad and one param dtype as one grid of `blocks` blocks.
void launch_parts(cudaStream_t s, const AdamWParts& batch, std::size_t blocks, DType grad_type,
                  DType param_type) {
    check(blocks < (std::size_t(1) << 31), "internal: AdamW over more than 2^31 blocks");
    dispatch(grad_type, [&](auto gtag) {
        dispatch(param_type, [&](auto ptag) {
            using G = typename decltype(gtag)::type;
            using P = typename decltype(ptag)::type;
            launch("adamw", adamw_kernel<G, P>, unsigned(blocks), kThreads, 0, s, batch);
        });
    });
}
} // namespace

void adamw(cudaStream_t s, const AdamWInput* inputs, std::size_t count) {
    std::size_t i = 0;
    while (i < count) {
        // A launch: up to kAdamWParts non-empty inputs in a row with the first one's dtypes.
        const DType grad_type = inputs[i].grad_type, param_type = inputs[i].param_type;
        AdamWParts batch{};
        std::size_t blocks = 0;
        for (; i < count && batch.count < kAdamWParts; ++i) {
            const AdamWInput& x = inputs[i];
            if (x.grad_type != grad_type || x.param_type != param_type) break;
            if (x.n == 0) continue;
            batch.part[batch.count++] = {x.master,         x.m, x.v, x.grad, x.params, x.n,
                                         unsigned(blocks), x.k};
            blocks += blocks_for(x.n, kThreads);
        }
        if (batch.count > 0) launch_parts(s, batch, blocks, grad_type, param_type);
    }
}

} // namespace shardlab::cuda
