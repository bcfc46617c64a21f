// Preset first, then each flag that was given overrides its field.
#include "launch/model_options.h"

#include "launch/flag_checks.h"

#include "core/error.h"
#include "model/family.h"

#include <fmt/format.h>

namespace shardlab {

ModelConfig ModelOptions::config() const {
    // The preset, else the small preset of --arch's family (GPT-2's "tiny" by default).
    const std::string name =
        !preset.empty()
            ? preset
            : family(arch.empty() ? Architecture::gpt2 : parse_architecture(arch)).small_preset;
    ModelConfig c = model_preset(name);
    if (!arch.empty() && parse_architecture(arch) != c.arch)
        throw UsageError(fmt::format("--preset {} is a {} model, not --arch {}; drop one of them",
                                     name, architecture_name(c.arch), arch));
    require_family_built(c.arch);
    c = apply_model_fields(c, fields);
    if (tied_head) c.tied_head = true;
    c.vocab_multiple = vocab_multiple;
    c.validate();
    return c;
}

ModelConfig apply_model_fields(ModelConfig c, const ModelFields& f) {
    if (f.hidden && family(c.arch).ffn_follows_hidden) c.ffn_width = 0; // follows the new width
    if (f.layers) c.layers = f.layers;
    if (f.hidden) c.hidden = f.hidden;
    if (f.heads) c.heads = c.kv_heads = f.heads;
    if (f.kv_heads) c.kv_heads = f.kv_heads;
    if (f.ffn) c.ffn_width = f.ffn;
    if (f.vocab) c.vocab = f.vocab;
    if (f.seq) c.context = f.seq;
    return c;
}

void add_model_field_options(CLI::App& cmd, ModelFields& f) {
    cmd.add_option("--layers", f.layers, "Transformer blocks (overrides the preset)")
        ->check(at_least(1));
    cmd.add_option("--hidden", f.hidden, "Hidden size d")->check(at_least(1));
    cmd.add_option("--heads", f.heads, "Attention heads")->check(at_least(1));
    cmd.add_option("--kv-heads", f.kv_heads,
                   "Key/value heads, dividing --heads (grouped-query attention; GPT-2: = heads)")
        ->check(at_least(1));
    cmd.add_option("--ffn", f.ffn, "MLP width (GPT-2: 4 x hidden only)")->check(at_least(1));
    cmd.add_option("--vocab", f.vocab, "Vocabulary size")->check(at_least(1));
    cmd.add_option("--seq", f.seq, "Context length (rows of the position table)")
        ->check(at_least(1));
}

void add_model_options(CLI::App& cmd, ModelOptions& o) {
    cmd.add_option("--arch", o.arch, family_names() + " (default: the preset's)");
    cmd.add_option("--preset", o.preset, model_preset_names() + " (default: tiny)");
    add_model_field_options(cmd, o.fields);
    cmd.add_flag("--tied-head", o.tied_head,
                 "Llama: the output head is the token embedding (no lm_head; GPT-2 always is)");
    cmd.add_option("--vocab-multiple", o.vocab_multiple,
                   "Store wte (and compute the head's GEMMs and logits) with the vocabulary "
                   "padded to a multiple of this, the padding masked out of the loss: the same "
                   "model, faster GEMMs (1: no padding)")
        ->check(in_range(1, 65536));
}

} // namespace shardlab
