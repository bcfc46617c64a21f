// The model-shape flags every command shares (--preset and per-field overrides, as `plan` and
// `train` name them), turned into a validated GPTConfig.
#pragma once

#include "model/gpt_config.h"

#include <CLI/CLI.hpp>

namespace shardlab {

struct ModelOptions {
    std::string preset = "tiny";
    int layers = 0, hidden = 0, heads = 0, kv_heads = 0, vocab = 0, seq = 0; // 0: the preset's
    int vocab_multiple = GPTConfig::kDefaultVocabMultiple; // wte rows padded to a multiple of it
    GPTConfig config() const;
};

void add_model_options(CLI::App& cmd, ModelOptions& o);

} // namespace shardlab
