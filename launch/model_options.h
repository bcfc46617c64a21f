// The model-shape flags: the per-field ones every command that names a model takes (train, init,
// bench step, plan: --layers ... --seq), laid over a preset by one function; and the whole set
// train, init and bench step share (--arch, --preset, the fields, --tied-head, --vocab-multiple),
// turned into a validated ModelConfig of a family that has a model (model/architecture.h). plan
// keeps its own --arch / --preset defaults (the family's plan preset) and --params.
#pragma once

#include "model/model_presets.h"

#include <CLI/CLI.hpp>

namespace shardlab {

// --layers, --hidden, --heads, --kv-heads, --ffn, --vocab, --seq; 0: not given (the base's).
struct ModelFields {
    int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, seq = 0;
    bool any() const { return layers || hidden || heads || kv_heads || ffn || vocab || seq; }
};

// `base` with each given field in place of its own: --heads sets the kv heads too unless
// --kv-heads is given, and a new --hidden makes the MLP width follow it where the family's does
// (GPT-2's 4 x hidden) unless --ffn is given. Not validated: the caller does.
ModelConfig apply_model_fields(ModelConfig base, const ModelFields& f);

void add_model_field_options(CLI::App& cmd, ModelFields& f);

struct ModelOptions {
    std::string arch;   // "": the preset's
    std::string preset; // "": tiny (gpt2), tiny-llama (llama)
    ModelFields fields;
    int vocab_multiple = ModelConfig::kDefaultVocabMultiple; // wte rows padded to a multiple of it
    bool tied_head = false;                                  // --tied-head (false: the preset's)
    ModelConfig config() const;
};

void add_model_options(CLI::App& cmd, ModelOptions& o);

} // namespace shardlab
