// AdamW with PyTorch's semantics (torch.optim.AdamW): decoupled weight decay, bias correction.
// The settings of a run, and the per-step coefficients every AdamW kernel applies
// (model/kernels/adamw_step.h).
#pragma once

#include "model/kernels/adamw_step.h"

namespace shardlab {

struct AdamWConfig {
    float lr = 6e-4f;
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.1f;
};

// step is 1-based. decay: apply weight decay to these elements (2-D weights only, by convention).
// grad_scale multiplies every gradient first (1 / loss scale, times the clipping factor).
AdamWStep adamw_step(const AdamWConfig& c, float lr, int step, bool decay, float grad_scale);

} // namespace shardlab
