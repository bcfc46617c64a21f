// GPTConfig: the shape of a GPT-2 model, its presets, and the checks that a shape is usable.
// kv_heads is carried (GQA-ready) but the GPT-2 kernels require kv_heads == heads for now.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <string>

namespace shardlab {

struct GPTConfig {
    int vocab = 256;   // V
    int context = 256; // T_max: rows of the position table
    int layers = 4;    // L
    int hidden = 256;  // d
    int heads = 4;     // H
    int kv_heads = 4;  // H_kv (GQA when < heads)

    int head_dim() const { return hidden / heads; }
    int ffn() const { return 4 * hidden; }
    std::size_t num_params() const; // exact count, tied head counted once
    // The same count in floating point: cannot overflow, so it can size up a config read from an
    // untrusted file before anything is allocated for it.
    double num_params_f64() const;

    // Throws UsageError naming the bad field and the fix.
    void validate() const;
    std::string describe() const; // "L=4 d=256 H=4 T=256 V=256 (3.41M params)"
};

// Presets: tiny (L4 d256 H4 T256 V256), gpt2 (124M), gpt2-medium, gpt2-large, gpt2-xl.
GPTConfig gpt_preset(const std::string& name);

nlohmann::json config_to_json(const GPTConfig& c);
GPTConfig config_from_json(const nlohmann::json& j); // validates

} // namespace shardlab
