// What a Llama step costs, counted from the calls model/llama/llama_model.cpp makes: its GEMMs as
// shapes, the memory-bound kernels' bytes, and what LlamaModel allocates, exactly (the plan's
// activation and workspace terms; a training report holds the measurement equal to them) — the
// family's answers to the plan and the time model (model/family.h). S: the storage dtype's bytes.
#pragma once

#include "model/attention_kind.h"
#include "model/checkpoint_policy.h"
#include "model/gemm_shape.h"
#include "model/kernel_bytes.h"
#include "model/model_config.h"

#include <cstdint>
#include <vector>

namespace shardlab {

// Fused q/k/v, o_proj, gate, up, down (per_step = layers), then the head, tied or not.
std::vector<GemmShape> llama_gemm_shapes(const ModelConfig& c, std::int64_t tokens);
// N = micro-batch x sequence tokens, es = the activations' dtype size in bytes.
KernelBytes llama_kernel_bytes(const ModelConfig& c, double N, double es);

// The activation peak of one micro-batch: the residual stream's L+1 inputs; each kept layer's
// n1, atty, h, n2 [BT, d], qkv [BT, (H + 2 Hkv) hd], gate, up, act [BT, ffn] in S bytes, r1, r2
// [BT] and lse [B, H, T] in fp32; the head's norm output, its 1/rms and the logits [BT, Vp].
// Attention is flash only (grouped-query attention has no materializing kernel): `attention`
// changes nothing.
std::uint64_t llama_activation_bytes(const ModelConfig& c, int batch, int seq, std::uint64_t S,
                                     CheckpointPolicy checkpoint, AttentionKind attention);
// Backward's scratch: dx, dsmall [BT, d], dqkv [BT, (H + 2 Hkv) hd], d act, d gate, d up [BT, ffn].
std::uint64_t llama_gradient_scratch_bytes(const ModelConfig& c, int batch, int seq,
                                           std::uint64_t S);

} // namespace shardlab
