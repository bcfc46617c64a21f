// AdamW on fp32 master weights, m and v from gradients of any storage type (model/kernels/
// adamw_step.h has the arithmetic). Threads split the range; 16-bit gradients are widened a tile
// at a time. The same kernel serves the on-device update of the CPU backend and the host update
// of offload.
#pragma once

#include "core/dtype.h"
#include "model/kernels/adamw_step.h"

#include <cstddef>

namespace shardlab::cpu {

void adamw(float* master, float* m, float* v, const void* grad, DType grad_type, std::size_t n,
           const AdamWStep& k);

} // namespace shardlab::cpu
