// The host AdamW update's time over n parameters — the kernel offload's tile pipeline runs
// (model/kernels/cpu/adamw.h, fp32 gradients as offload widens them). `bench adamw` reads it
// against the bandwidth bound; `shardlab calibrate` records it as parameters per second.
#pragma once

#include <cstddef>

namespace shardlab {

// The median seconds of `iters` updates (after one untimed) of p, m, v from g, with AdamW's
// default coefficients and a step count that advances each call.
double host_adamw_seconds(float* p, float* m, float* v, const float* g, std::size_t n, int iters);

} // namespace shardlab
