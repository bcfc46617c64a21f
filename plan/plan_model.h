// What the plan is asked about: a model's architecture (a GPT-2 or llama-style preset, explicit
// fields, or a bare parameter count), reduced to what memory and traffic depend on — the
// parameter count, the sharding units, and the shapes activations and KV cache scale with.
#pragma once

#include "model/architecture.h"
#include "model/model_config.h"

#include <cstddef>
#include <string>
#include <vector>

namespace shardlab {

struct PlanModel {
    std::string name;
    Architecture arch = Architecture::gpt2;
    int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, context = 0;
    std::size_t params = 0;                 // Ψ
    std::vector<std::size_t> unit_numel;    // sharding units in order (one unit when params_only)
    int embedding_unit = 0, final_unit = 0; // indices into unit_numel (equal when params_only)
    bool tied_head = true;                  // GPT-2 ties the output head to the token embedding
    // The token embedding (and an untied head), the head's GEMMs and the logits have the
    // vocabulary padded to this multiple, as a run stores them (ModelConfig::vocab_multiple);
    // params and unit_numel include the padding.
    int vocab_multiple = 1;
    ModelConfig config; // the model's own (gpt2 and llama; unset for a bare count)

    const ModelConfig& model_config() const { return config; }
    int padded_vocab() const; // Vp (vocab for a bare count)
    // Ψ of the model itself, padding not counted: what Hugging Face's model holds (DeepSpeed's
    // estimator is given this, plan/deepspeed_estimate.cpp).
    std::size_t unpadded_params() const;
};

// A preset of the one table (model/model_presets.h), reduced to what the plan needs.
PlanModel plan_model_preset(const std::string& name);
bool is_llama_preset(const std::string& name);
// Any family's config, by its architecture.
PlanModel plan_model_from(const ModelConfig& c, const std::string& name);
PlanModel plan_model_from_gpt2(const ModelConfig& c, const std::string& name);
// Llama-style: untied head, SwiGLU MLP (3 matrices of d x ffn), RMSNorm, grouped KV heads.
// tied: the output head is the token embedding (SmolLM, Llama 3.2 1B/3B).
PlanModel plan_model_llama(int layers, int hidden, int heads, int kv_heads, int ffn, int vocab,
                           int context, const std::string& name, bool tied = false,
                           int vocab_multiple = ModelConfig::kDefaultVocabMultiple);
PlanModel plan_model_params_only(double params);

} // namespace shardlab
