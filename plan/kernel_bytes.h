// The bytes the memory-bound kernels of one micro-batch move (docs/TIME.md section 5), one
// function per model family: each counts the kernels its model file calls, since GPT-2's and a
// Llama's differ (LayerNorm + biases + GELU + a position table; RMSNorm + RoPE + SwiGLU, no bias).
// The GEMMs and attention are not here: their FLOPs come from the shapes every family shares the
// counting of (plan/time_work.cpp).
#pragma once

#include "model/model_config.h"

namespace shardlab {

// Bytes by the part of the model that moves them; block_* are one block's.
struct KernelBytes {
    double block_forward = 0, block_backward = 0;
    double head_forward = 0, head_backward = 0;
    double embed_forward = 0, embed_backward = 0;
};

// N = micro-batch x sequence tokens, es = the activations' dtype size in bytes.
KernelBytes gpt2_kernel_bytes(const ModelConfig& c, double N, double es);
KernelBytes llama_kernel_bytes(const ModelConfig& c, double N, double es);

} // namespace shardlab
