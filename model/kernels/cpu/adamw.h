// AdamW on fp32 master weights, m and v from gradients of any storage type (model/kernels/
// adamw_step.h has the arithmetic). Threads split the elements; 16-bit gradients are widened a
// tile at a time, and the updated weights rounded to the model's dtype in the same pass. The same
// kernel serves the on-device update of the CPU backend and the host update of offload.
#pragma once

#include "core/dtype.h"
#include "model/kernels/adamw_step.h"

#include <cstddef>
#include <vector>

namespace shardlab::cpu {

// One tensor of an update: n master weights, their moments and gradient, the tensor's step
// constants, and where its updated weights go rounded to params_type (params null: nowhere).
struct AdamWSegment {
    float* master;
    float* m;
    float* v;
    const void* grad;
    DType grad_type;
    void* params;
    DType params_type;
    std::size_t n;
    AdamWStep k;
};

// Every segment in one parallel region, each thread its share of all the elements: a model's
// small tensors (biases, norms) cost no team of their own.
void adamw(const std::vector<AdamWSegment>& segments);

// One tensor, no rounded copy.
void adamw(float* master, float* m, float* v, const void* grad, DType grad_type, std::size_t n,
           const AdamWStep& k);

} // namespace shardlab::cpu
