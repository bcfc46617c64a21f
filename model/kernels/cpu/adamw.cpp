// The update in PyTorch's order (model/kernels/adamw_step.h). The fp32 loop is compiled for
// AVX-512, AVX2 and baseline x86-64 and picked at run time (target_clones); shardlab builds with
// -ffp-contract=off, so no variant fuses a multiply-add and all of them round identically.
#include "model/kernels/cpu/adamw.h"

#include "model/kernels/cpu/target_clones.h"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace shardlab::cpu {

namespace {
SHARDLAB_TARGET_CLONES void adamw_f32(float* __restrict p, float* __restrict m, float* __restrict v,
                                      const float* __restrict g, std::size_t n, AdamWStep k) {
    for (std::size_t i = 0; i < n; ++i) {
        const float gi = g[i] * k.grad_scale;
        const float mi = k.b1 * m[i] + (1.0f - k.b1) * gi;
        const float vi = k.b2 * v[i] + (1.0f - k.b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * k.keep - k.step_size * mi / (std::sqrt(vi) * k.inv_bc2_sqrt + k.eps);
    }
}

// Each thread updates one contiguous range; 16-bit gradients are widened a tile at a time.
template <typename Widen>
void parallel_update(float* p, float* m, float* v, const void* grad, std::size_t n, AdamWStep k,
                     Widen widen) {
#pragma omp parallel
    {
        const std::size_t t = std::size_t(omp_get_thread_num()),
                          nt = std::size_t(omp_get_num_threads());
        const std::size_t lo = n * t / nt, hi = n * (t + 1) / nt;
        if constexpr (std::is_same_v<Widen, std::nullptr_t>) {
            adamw_f32(p + lo, m + lo, v + lo, static_cast<const float*>(grad) + lo, hi - lo, k);
        } else {
            constexpr std::size_t kTile = 4096;
            std::vector<float> g(kTile);
            for (std::size_t i = lo; i < hi; i += kTile) {
                const std::size_t len = std::min(kTile, hi - i);
                widen(grad, i, len, g.data());
                adamw_f32(p + i, m + i, v + i, g.data(), len, k);
            }
        }
    }
}
} // namespace

void adamw(float* master, float* m, float* v, const void* grad, DType grad_type, std::size_t n,
           const AdamWStep& k) {
    if (grad_type == DType::f32) return parallel_update(master, m, v, grad, n, k, nullptr);
    parallel_update(master, m, v, grad, n, k,
                    [grad_type](const void* src, std::size_t at, std::size_t len, float* out) {
                        const auto* s = static_cast<const std::uint16_t*>(src) + at;
                        if (grad_type == DType::bf16)
                            for (std::size_t i = 0; i < len; ++i) out[i] = bf16_to_f32(s[i]);
                        else
                            for (std::size_t i = 0; i < len; ++i) out[i] = f16_to_f32(s[i]);
                    });
}

} // namespace shardlab::cpu
