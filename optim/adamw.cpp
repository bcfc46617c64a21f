// The update in the order PyTorch applies it, so float64 references agree closely:
// p *= 1 - lr*wd; m, v moments; p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps).
#include "optim/adamw.h"

#include <cmath>
#include <cstdint>

namespace shardlab {

namespace {
template <typename Load>
void update(float* p, float* m, float* v, std::size_t n, const AdamWConfig& c, float lr, int step,
            bool decay, float grad_scale, Load load) {
    const float bc1 = 1.0f - std::pow(c.beta1, float(step));
    const float bc2_sqrt = std::sqrt(1.0f - std::pow(c.beta2, float(step)));
    const float step_size = lr / bc1;
    const float keep = decay ? 1.0f - lr * c.weight_decay : 1.0f;
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
        const float g = load(i) * grad_scale;
        m[i] = c.beta1 * m[i] + (1.0f - c.beta1) * g;
        v[i] = c.beta2 * v[i] + (1.0f - c.beta2) * g * g;
        const float denom = std::sqrt(v[i]) / bc2_sqrt + c.eps;
        p[i] = p[i] * keep - step_size * m[i] / denom;
    }
}
} // namespace

void adamw_update(float* master, float* m, float* v, const void* grad, DType grad_type,
                  std::size_t n, const AdamWConfig& cfg, float lr, int step, bool decay,
                  float grad_scale) {
    switch (grad_type) {
    case DType::f32: {
        auto* g = static_cast<const float*>(grad);
        return update(master, m, v, n, cfg, lr, step, decay, grad_scale,
                      [g](std::size_t i) { return g[i]; });
    }
    case DType::bf16: {
        auto* g = static_cast<const std::uint16_t*>(grad);
        return update(master, m, v, n, cfg, lr, step, decay, grad_scale,
                      [g](std::size_t i) { return bf16_to_f32(g[i]); });
    }
    case DType::f16: {
        auto* g = static_cast<const std::uint16_t*>(grad);
        return update(master, m, v, n, cfg, lr, step, decay, grad_scale,
                      [g](std::size_t i) { return f16_to_f32(g[i]); });
    }
    }
}

} // namespace shardlab
