// The memory-bound kernels' bandwidth: the ops of a step whose time is the bytes they move, not
// their arithmetic — LayerNorm and GELU forward on the model's activations, and the on-device
// AdamW over a large array — each timed through Ops on the compute stream and charged with the
// bytes it must read and write (docs/TIME.md "Memory-bound kernels").
#pragma once

#include "model/backend.h"
#include "plan/machine_profile.h"

#include <cstdint>
#include <vector>

namespace shardlab {

// LayerNorm forward over [tokens, d] and GELU forward over [tokens, 4d] in dtype t; AdamW over
// adamw_params parameters with gradients and parameters in t. The median of `reps` calls each,
// the slowest rank's (collective over comm).
std::vector<KernelSample> measure_memory_kernels(Backend& backend, DType t, std::int64_t tokens,
                                                 std::int64_t d, std::int64_t adamw_params,
                                                 int reps, MPI_Comm comm);

} // namespace shardlab
