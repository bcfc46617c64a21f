// The model-shape flags train, init and bench step share (--arch, --preset and per-field
// overrides, as `plan` names them), turned into a validated ModelConfig of a family that has a
// model (model/architecture.h). plan takes --arch through the same parse_architecture.
#pragma once

#include "model/model_presets.h"

#include <CLI/CLI.hpp>

namespace shardlab {

struct ModelOptions {
    std::string arch;   // "": the preset's
    std::string preset; // "": tiny (gpt2), tiny-llama (llama)
    int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, seq = 0; // 0: preset's
    int vocab_multiple = ModelConfig::kDefaultVocabMultiple; // wte rows padded to a multiple of it
    bool tied_head = false;                                  // --tied-head (false: the preset's)
    ModelConfig config() const;
};

void add_model_options(CLI::App& cmd, ModelOptions& o);

} // namespace shardlab
