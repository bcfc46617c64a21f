// The CUDA kernels, behind plain C++ declarations (device pointers, no CUDA types) so the rest of
// shardlab includes no CUDA header. Implemented in *.cu when nvcc is found, and by
// cuda_kernels_stub.cpp — which says clearly that CUDA was not built — otherwise. Each kernel has
// the semantics of its CPU twin in model/kernels/cpu/, and tests hold the two against each other
// on a GPU.
#pragma once

#include "core/dtype.h"
#include "model/kernels/adamw_step.h"

#include <cstddef>

namespace shardlab::cuda {

// GELU (tanh form) on n elements of dtype t (fp32 or bf16), fp32 arithmetic. Synchronous.
void gelu_forward(void* out, const void* in, std::size_t n, DType t);
// dinp = gelu'(inp) * dout (overwrites dinp).
void gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, DType t);

// AdamW on an fp32 master shard with fp32 m, v and gradients of dtype grad_type, then the
// parameters (dtype param_type) rewritten from the master copy — one fused pass. Same arithmetic
// and order as the CPU update (model/kernels/cpu/adamw.cpp). params may be nullptr (fp32 without
// master).
void adamw_update_fused(float* master, float* m, float* v, const void* grad, DType grad_type,
                        void* params, DType param_type, std::size_t n, const AdamWStep& k);

} // namespace shardlab::cuda
