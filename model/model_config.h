// ModelConfig: the shape of a model of any family (model/architecture.h, model/family.h), and
// the checks that a shape is usable. The first seven fields are every family's; the rest are read
// by the families that have them (GPT-2: LayerNorm, learned positions, GELU MLP 4 x hidden wide,
// tied head; a Llama: RMSNorm, rotary positions, SwiGLU MLP ffn wide, grouped-query attention,
// tied or untied head) — counts, validation and JSON dispatch to the config's family.
// vocab_multiple is how the model is stored, not what it is: wte (and so the head's GEMMs and the
// logits) gets padded_vocab() rows, V rounded up to that multiple, the rows past V zero and masked
// out of the loss — the same model, with GEMM dimensions a GPU or a BLAS runs fast
// (docs/MEMORY.md).
#pragma once

#include "model/architecture.h"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <string>

namespace shardlab {

struct ModelConfig {
    int vocab = 256;                            // V
    int context = 256;                          // T_max: rows of the position table
    int layers = 4;                             // L
    int hidden = 256;                           // d
    int heads = 4;                              // H
    int kv_heads = 4;                           // H_kv (GQA when < heads)
    int vocab_multiple = kDefaultVocabMultiple; // M: wte stored with V rounded up to M rows
    Architecture arch = Architecture::gpt2;     // the family: the registry's key
    int ffn_width = 0;       // the MLP's width; 0: the family's default, 4 x hidden (GPT-2's only)
    bool tied_head = true;   // the output head is the token embedding (GPT-2 always)
    double rope_theta = 1e4; // llama: the rotary base (Hugging Face rope_theta)
    double norm_eps = 1e-5;  // llama: RMSNorm's epsilon (Hugging Face rms_norm_eps)
    // llama: Llama 3.1 / 3.2's rope_scaling (rope_type "llama3"; model/kernels/rope_frequency.h):
    // factor 0 is none.
    double rope_factor = 0, rope_low_freq = 1, rope_high_freq = 4;
    int rope_original_context = 8192;

    static constexpr int kDefaultVocabMultiple = 128;
    // A bound on V that keeps every V-sized count far inside an int (Llama 3's is 128,256).
    static constexpr int kMaxVocab = 1 << 22;

    int head_dim() const { return hidden / heads; }
    int ffn() const { return ffn_width ? ffn_width : 4 * hidden; }
    int padded_vocab() const;       // Vp = V rounded up to a multiple of vocab_multiple
    std::size_t num_params() const; // exact count of the model (true V), tied head counted once
    // The elements the parameters take in memory: num_params() + (Vp - V) * d zero padding.
    std::size_t num_params_stored() const;
    // The true count in floating point: cannot overflow, so it can size up a config read from an
    // untrusted file before anything is allocated for it.
    double num_params_f64() const;

    // Throws UsageError naming the bad field and the fix.
    void validate() const;
    // "L=4 d=256 H=4 T=256 V=256 (3.41M params)"; with padding "L=12 d=768 H=12 T=1024 V=50257
    // (124.44M params; 124.48M stored, V padded to 50304)"; llama: "llama L=4 d=256 H=4 Hkv=2
    // ffn=688 T=256 V=256 untied (...)".
    std::string describe() const;
};

// The model's shape (vocab is the true V), "arch", and the family's own fields (Family::to_json;
// a llama's "ffn", "rope_theta", "rms_eps", "tied" — tools/torch_llama.py's names). A config
// without "arch" is GPT-2: weights and checkpoints written before the architecture was recorded
// load as they did. vocab_multiple is not written: a weights file holds the true V and loads into
// any padding; config_from_json leaves the default, which the caller sets from its own flag
// (checkpoints record theirs beside the model, optim/checkpoint.cpp).
nlohmann::json config_to_json(const ModelConfig& c);
ModelConfig config_from_json(const nlohmann::json& j); // validates

// One field of a JSON config (shardlab's, or a Hugging Face config.json), checked: UsageError
// "<where>: "<key>" is missing / is 2.5, not a whole number / is 4294967299, out of range".
// (get<int>() would cast 1e20 with undefined behaviour, or wrap 2^32 + 3 to 3, and a corrupt
// config would pass validate() as another model.)
int config_int(const nlohmann::json& j, const char* key, const std::string& where);
double config_number(const nlohmann::json& j, const char* key, const std::string& where);
bool config_bool(const nlohmann::json& j, const char* key, const std::string& where);

} // namespace shardlab
