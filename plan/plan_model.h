// What the plan is asked about: a model of any family (a preset, explicit fields) or a bare
// parameter count, reduced to what memory and traffic depend on — the parameter count, the
// sharding units, and the shapes activations and KV cache scale with.
#pragma once

#include "model/architecture.h"
#include "model/model_config.h"

#include <cstddef>
#include <string>
#include <vector>

namespace shardlab {

struct PlanModel {
    std::string name;
    // The model's shape, its one copy: the preset's or the fields' config (gpt2, llama; what the
    // family's layout, GEMM shapes and activation counts read). A bare parameter count has none:
    // its config's arch is params_only, every shape field 0 and vocab_multiple 1.
    ModelConfig config;
    std::size_t params = 0;                 // Ψ
    std::vector<std::size_t> unit_numel;    // sharding units in order (one unit when params_only)
    int embedding_unit = 0, final_unit = 0; // indices into unit_numel (equal when params_only)

    Architecture arch() const { return config.arch; }
    // Ψ of the model itself, padding not counted: what Hugging Face's model holds (DeepSpeed's
    // estimator is given this, plan/deepspeed_estimate.cpp). The token embedding (and an untied
    // head) are stored with the vocabulary padded to config.vocab_multiple (config.padded_vocab()
    // rows, as a run stores them); params and unit_numel include the padding.
    std::size_t unpadded_params() const;
};

// A preset of the one table (model/model_presets.h), reduced to what the plan needs.
PlanModel plan_model_preset(const std::string& name);
// Any family's config, validated as a run's (ModelConfig::validate: the family's own rules).
PlanModel plan_model_from(const ModelConfig& c, const std::string& name);
PlanModel plan_model_params_only(double params);

} // namespace shardlab
