// What LlamaModel allocates, counted exactly (the plan's activation and workspace terms for a
// Llama; a training report holds the measurement equal to them). S: the storage dtype's bytes.
#pragma once

#include "model/checkpoint_policy.h"
#include "model/model_config.h"

#include <cstdint>

namespace shardlab {

// The activation peak of one micro-batch: the residual stream's L+1 inputs; each kept layer's
// n1, atty, h, n2 [BT, d], qkv [BT, (H + 2 Hkv) hd], gate, up, act [BT, ffn] in S bytes, r1, r2
// [BT] and lse [B, H, T] in fp32; the head's norm output, its 1/rms and the logits [BT, Vp].
std::uint64_t llama_activation_bytes(const ModelConfig& c, int batch, int seq, std::uint64_t S,
                                     CheckpointPolicy checkpoint);
// Backward's scratch: dx, dsmall [BT, d], dqkv [BT, (H + 2 Hkv) hd], d act, d gate, d up [BT, ffn].
std::uint64_t llama_gradient_scratch_bytes(const ModelConfig& c, int batch, int seq,
                                           std::uint64_t S);

} // namespace shardlab
