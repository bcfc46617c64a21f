// The update in PyTorch's order (model/kernels/adamw_step.h). The fp32 loop is compiled for
// AVX-512, AVX2 and baseline x86-64 and picked at run time (target_clones); shardlab builds with
// -ffp-contract=off, so no variant fuses a multiply-add and all of them round identically. The
// widening and rounding are core/dtype.h's convert(), which a tile calls inside the team.
#include "model/kernels/cpu/adamw.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/parallel.h"

#include <algorithm>
#include <cmath>
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

constexpr std::size_t kTile = 4096; // elements widened and rounded at a time (16 KiB in fp32)

// Elements lo .. hi of the segments' concatenation, a tile at a time: widen the gradient, update,
// round the weights. Elementwise, so any split over threads gives the same bits.
void update_share(const std::vector<AdamWSegment>& segments, std::size_t lo, std::size_t hi) {
    std::vector<float> widened;
    std::size_t first = 0; // the segment's first element in the concatenation
    for (const AdamWSegment& s : segments) {
        const std::size_t begin = std::max(lo, first), end = std::min(hi, first + s.n);
        for (std::size_t i = begin; i < end; i += kTile) {
            const std::size_t at = i - first, len = std::min(kTile, end - i);
            const float* g = static_cast<const float*>(s.grad) + at;
            if (s.grad_type != DType::f32) {
                widened.resize(kTile);
                convert(static_cast<const char*>(s.grad) + at * dtype_size(s.grad_type),
                        s.grad_type, widened.data(), DType::f32, len);
                g = widened.data();
            }
            adamw_f32(s.master + at, s.m + at, s.v + at, g, len, s.k);
            if (s.params)
                convert(s.master + at, DType::f32,
                        static_cast<char*>(s.params) + at * dtype_size(s.params_type),
                        s.params_type, len);
        }
        first += s.n;
    }
}
} // namespace

void adamw(const std::vector<AdamWSegment>& segments) {
    std::size_t total = 0;
    for (const AdamWSegment& s : segments) total += s.n;
    parallel_ranges(total, [&](std::size_t lo, std::size_t hi) { update_share(segments, lo, hi); });
}

void adamw(float* master, float* m, float* v, const void* grad, DType grad_type, std::size_t n,
           const AdamWStep& k) {
    adamw({{master, m, v, grad, grad_type, nullptr, DType::f32, n, k}});
}

} // namespace shardlab::cpu
