// The model presets, every family's, in one table: `train`, `init` and `bench step` start from
// one (launch/model_options.h), `plan` reduces one to a PlanModel (plan/plan_model.cpp). Each is
// its model's published configuration (the Hugging Face config.json: num_hidden_layers,
// hidden_size, num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
// max_position_embeddings, tie_word_embeddings, rope_theta, rms_norm_eps); tests/test_plan.cpp
// holds the published parameter counts.
#pragma once

#include "model/model_config.h"

#include <string>

namespace shardlab {

// Every preset, for messages and --help.
inline constexpr const char* kModelPresets =
    "tiny, gpt2, gpt2-medium, gpt2-large, gpt2-xl (GPT-2); tiny-llama, smollm-135m, "
    "tinyllama-1.1b, llama-3.2-1b, llama-3-8b, 7b, 13b, 70b (Llama-shaped; 7b, 13b, 70b: Llama 2)";

// The preset's config (not validated: a Llama 3 vocabulary exceeds what training's uint16 tokens
// hold, and plan takes it as it is); nullptr when there is no such preset.
const ModelConfig* find_model_preset(const std::string& name);
// The same, or UsageError naming every preset.
ModelConfig model_preset(const std::string& name);

} // namespace shardlab
