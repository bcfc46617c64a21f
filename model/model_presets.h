// The model presets: one table, each family's part defined in its folder (Family::presets).
// `train`, `init` and `bench step` start from one (launch/model_options.h), `plan` reduces one to
// a PlanModel (plan/plan_model.cpp). Each is its model's published configuration (the Hugging
// Face config.json); tests/test_plan.cpp holds the published parameter counts.
#pragma once

#include "model/model_config.h"

#include <string>

namespace shardlab {

// A published configuration under the name `--preset` takes; each family lists its own
// (Family::presets).
struct ModelPreset {
    const char* name;
    ModelConfig config;
};

// Every preset by family, for messages and --help: "tiny, gpt2, ... (gpt2); tiny-llama, ...
// (llama)".
std::string model_preset_names();
// The preset's config (not validated: a Llama 3 vocabulary exceeds what training's uint16 tokens
// hold, and plan takes it as it is); nullptr when there is no such preset.
const ModelConfig* find_model_preset(const std::string& name);
// The same, or UsageError naming every preset.
ModelConfig model_preset(const std::string& name);

} // namespace shardlab
