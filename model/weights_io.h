// GPT-2 weights to and from safetensors, in Hugging Face's names and shapes, with the model
// config in the file's metadata ("config": JSON). Loading checks the file against the config's
// layout and names every missing, unexpected or mis-shaped tensor in one error.
#pragma once

#include "core/dtype.h"
#include "model/gpt_config.h"
#include "model/param_layout.h"

#include <string>
#include <vector>

namespace shardlab {

struct ModelWeights {
    GPTConfig config;
    std::vector<std::vector<float>> units; // fp32 values, one vector per sharding unit
};

// Stores every tensor as fp32 or bf16 (rounded to nearest even).
void save_weights(const std::string& path, const ModelWeights& weights, DType store_as);

// Reads weights; names with or without the "transformer." prefix are accepted, and the tied
// "lm_head.weight" and the causal-mask buffers "*.attn.bias" / "*.attn.masked_bias" are ignored.
// Without a "config" metadata entry (a Hugging Face checkpoint) the config is inferred from the
// tensor shapes, with GPT-2's head size of 64.
ModelWeights load_weights(const std::string& path);

} // namespace shardlab
