// What a GPT-2 step costs, counted from the calls model/gpt2/gpt_model.cpp makes: its GEMMs as
// shapes, the memory-bound kernels' bytes, the activation peak and backward's scratch — the
// family's answers to the plan and the time model (model/family.h).
#pragma once

#include "model/attention_kind.h"
#include "model/checkpoint_policy.h"
#include "model/gemm_shape.h"
#include "model/kernel_bytes.h"
#include "model/model_config.h"

#include <cstdint>
#include <vector>

namespace shardlab {

// q/k/v, attention projection, MLP up and down (per_step = layers), then the tied head.
std::vector<GemmShape> gpt2_gemm_shapes(const ModelConfig& c, std::int64_t tokens);
// N = micro-batch x sequence tokens, es = the activations' dtype size in bytes.
KernelBytes gpt2_kernel_bytes(const ModelConfig& c, double N, double es);
// GPTModel's activation peak for one micro-batch (S: the storage dtype's bytes). Attention's
// share of a block: B·H·T·T probabilities of S bytes (materialize) or the B·H·T fp32
// log-sum-exps (flash).
std::uint64_t gpt2_activation_bytes(const ModelConfig& c, int batch, int seq, std::uint64_t S,
                                    CheckpointPolicy ck, AttentionKind attention);
// Backward's scratch: dx, dsmall [BT, d], a [BT, 3d] and a [BT, 4d] gradient: 9 B T d elements.
std::uint64_t gpt2_gradient_scratch_bytes(const ModelConfig& c, int batch, int seq,
                                          std::uint64_t S);

} // namespace shardlab
