// The coefficients of one AdamW update of one group of parameters, precomputed on the host from
// the optimizer's settings (optim/adamw.h) so that every kernel — CPU or CUDA — applies the same
// arithmetic in the same order:
//   g = grad * grad_scale;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g g;
//   p = p * keep - step_size * m / (sqrt(v) * inv_bc2_sqrt + eps)
// with keep = 1 - lr * weight_decay (1 without decay), step_size = lr / (1 - b1^t) and
// inv_bc2_sqrt = 1 / sqrt(1 - b2^t): PyTorch's AdamW, its two divisions made multiplications.
#pragma once

namespace shardlab {

struct AdamWStep {
    float b1, b2, keep, step_size, inv_bc2_sqrt, eps, grad_scale;
};

} // namespace shardlab
