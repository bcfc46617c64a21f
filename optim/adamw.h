// AdamW with PyTorch's semantics (torch.optim.AdamW): decoupled weight decay, bias correction.
// Updates fp32 master weights in place from gradients of any storage type, scaled by
// grad_scale (1 / loss scale, clipping factor). One routine per device: this is the CPU one.
#pragma once

#include "core/dtype.h"

#include <cstddef>

namespace shardlab {

struct AdamWConfig {
    float lr = 6e-4f;
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.1f;
};

// step is 1-based. decay: apply weight decay to these elements (2-D weights only, by convention).
void adamw_update(float* master, float* m, float* v, const void* grad, DType grad_type,
                  std::size_t n, const AdamWConfig& cfg, float lr, int step, bool decay,
                  float grad_scale);

} // namespace shardlab
