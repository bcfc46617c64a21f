// Bias corrections in fp32, as the kernels have always computed them.
#include "optim/adamw.h"

#include <cmath>

namespace shardlab {

AdamWStep adamw_step(const AdamWConfig& c, float lr, int step, bool decay, float grad_scale) {
    const float bc1 = 1.0f - std::pow(c.beta1, float(step));
    const float bc2_sqrt = std::sqrt(1.0f - std::pow(c.beta2, float(step)));
    return {c.beta1,   c.beta2,         decay ? 1.0f - lr * c.weight_decay : 1.0f,
            lr / bc1,  1.0f / bc2_sqrt, c.eps,
            grad_scale};
}

} // namespace shardlab
