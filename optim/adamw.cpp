// Bias corrections in fp32, as the kernels have always computed them.
#include "optim/adamw.h"

#include "core/error.h"

#include <fmt/format.h>

#include <cmath>

namespace shardlab {

AdamWStep adamw_step(const AdamWConfig& c, float lr, int step, bool decay, float grad_scale) {
    const float bc1 = 1.0f - std::pow(c.beta1, float(step));
    const float bc2_sqrt = std::sqrt(1.0f - std::pow(c.beta2, float(step)));
    const AdamWStep k{c.beta1,   c.beta2,         decay ? 1.0f - lr * c.weight_decay : 1.0f,
                      lr / bc1,  1.0f / bc2_sqrt, c.eps,
                      grad_scale};
    // The flags' checks keep each setting finite in fp32; their products can still overflow, and
    // an Inf coefficient would put NaN in every weight from a finite gradient.
    if (!std::isfinite(k.keep) || !std::isfinite(k.step_size) || !std::isfinite(k.inv_bc2_sqrt))
        throw UsageError(fmt::format(
            "AdamW at step {}: lr {} with weight decay {}, beta1 {} and beta2 {} gives a "
            "non-finite update (1 - lr wd = {}, lr / (1 - beta1^t) = {}); lower --lr or "
            "--weight-decay",
            step, lr, c.weight_decay, c.beta1, c.beta2, k.keep, k.step_size));
    return k;
}

} // namespace shardlab
