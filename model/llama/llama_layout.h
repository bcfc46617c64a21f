// Llama's parameters as sharding units, under Hugging Face LlamaForCausalLM's names and shapes
// (nn.Linear's [out, in]): the embeddings; one unit per decoder layer — input_layernorm, q, k, v
// (stored back to back, so one GEMM makes the fused [q | k | v] row grouped-query attention reads),
// o_proj, post_attention_layernorm, gate, up, down; the final unit — model.norm and, untied, the
// lm_head. embed_tokens and lm_head are stored with the padded vocabulary's rows (zero, masked).
#pragma once

#include "model/model_config.h"

#include <vector>

#include <cstddef>

namespace shardlab {

// Element offsets of one decoder layer's tensors inside its unit (the same for every layer).
struct LlamaBlockOffsets {
    std::size_t in_norm, qkv, o, post_norm, gate, up, down;
};

struct ParamUnit;
// The units ParamLayout(config) holds for a Llama config.
std::vector<ParamUnit> llama_units(const ModelConfig& c);
LlamaBlockOffsets llama_block_offsets(const ModelConfig& c);
// Offset of lm_head in the final unit (after model.norm); only for an untied head.
inline std::size_t llama_head_offset(const ModelConfig& c) {
    return std::size_t(c.hidden);
}

} // namespace shardlab
