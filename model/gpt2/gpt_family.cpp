// GPT-2's descriptor (model/family.h): Hugging Face's GPT2LMHeadModel — LayerNorm, learned
// positions, a GELU MLP 4 x hidden wide, one key/value head per query head, biases, the head tied
// to the token embedding. Its facts: presets, parameter count and rules, configs on disk, weight
// names; the layout (gpt_layout.h) and the costs (gpt_costs.h) are beside it.
#include "core/error.h"
#include "model/family.h"
#include "model/gpt2/gpt_costs.h"
#include "model/gpt2/gpt_layout.h"
#include "model/model_presets.h"
#include "model/param_layout.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace shardlab {

// Named, not anonymous: the library is a unity build, and every family names its parts alike.
namespace gpt2 {
constexpr ModelConfig preset(int L, int d, int H, int T, int V) {
    return ModelConfig{V, T, L, d, H, H};
}

constexpr ModelPreset kPresets[] = {
    {"tiny", preset(4, 256, 4, 256, 256)},
    {"gpt2", preset(12, 768, 12, 1024, 50257)},
    {"gpt2-medium", preset(24, 1024, 16, 1024, 50257)},
    {"gpt2-large", preset(36, 1280, 20, 1024, 50257)},
    {"gpt2-xl", preset(48, 1600, 25, 1024, 50257)},
};

std::span<const ModelPreset> presets() {
    return kPresets;
}

// wte, wpe, per block (ln_1, c_attn, attn c_proj, ln_2, c_fc, mlp c_proj), ln_f; in N's
// arithmetic; `rows`: the token embedding's rows (V, or Vp for the stored count).
template <typename N>
N count_params(const ModelConfig& c, int rows) {
    const N V = N(rows), T = N(c.context), d = N(c.hidden), L = N(c.layers);
    const N block =
        2 * d + (d * 3 * d + 3 * d) + (d * d + d) + 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d);
    return V * d + T * d + L * block + 2 * d;
}

void validate(const ModelConfig& c) {
    if (c.ffn() != 4 * c.hidden)
        throw UsageError(fmt::format("GPT-2's MLP is 4 x hidden = {} wide, not {}; another width "
                                     "is the llama architecture (--arch llama --ffn {})",
                                     4 * c.hidden, c.ffn(), c.ffn()));
    if (!c.tied_head)
        throw UsageError("GPT-2's output head is the token embedding; an untied head is the "
                         "llama architecture (--arch llama)");
    if (c.kv_heads != c.heads)
        throw UsageError(fmt::format(
            "GPT-2 has one key/value head per query head (kv-heads = heads = {}); grouped-query "
            "attention is the llama architecture: --arch llama --layers {} --hidden {} --heads {} "
            "--kv-heads {} --ffn {} --vocab {} --seq {}",
            c.heads, c.layers, c.hidden, c.heads, c.kv_heads, c.ffn(), c.vocab, c.context));
}

std::string describe(const ModelConfig& c) {
    return fmt::format("L={} d={} H={} T={} V={}", c.layers, c.hidden, c.heads, c.context, c.vocab);
}

// Beyond the shared fields GPT-2 has none: its MLP width and tied head follow from them.
void to_json(const ModelConfig&, nlohmann::json&) {}
void from_json(const nlohmann::json&, ModelConfig&) {}

void from_hf(const nlohmann::json& j, const std::string& where, ModelConfig& c) {
    c.vocab = config_int(j, "vocab_size", where);
    c.context = config_int(j, "n_positions", where);
    c.layers = config_int(j, "n_layer", where);
    c.hidden = config_int(j, "n_embd", where);
    c.heads = c.kv_heads = config_int(j, "n_head", where);
}

nlohmann::json to_hf(const ModelConfig& c) {
    return {
        {"model_type", "gpt2"},       {"architectures", nlohmann::json::array({"GPT2LMHeadModel"})},
        {"vocab_size", c.vocab},      {"n_positions", c.context},
        {"n_layer", c.layers},        {"n_embd", c.hidden},
        {"n_head", c.heads},          {"activation_function", "gelu_new"},
        {"layer_norm_epsilon", 1e-5}, {"tie_word_embeddings", true}};
}

// A file may hold the tied head's copy of wte and the causal-mask buffers.
bool ignored_tensor(const std::string& name, const ModelConfig&) {
    return name == "lm_head.weight" || name.ends_with(".attn.bias") ||
           name.ends_with(".attn.masked_bias");
}

// GPT-2 files name their tensors with or without "transformer.".
std::string canonical_name(const std::string& name) {
    return name.starts_with("transformer.") ? name : "transformer." + name;
}

// GPT2LMHeadModel's candidates; its other modules are smaller than these.
std::vector<DeepSpeedModule> deepspeed_modules(const ModelConfig& c) {
    const std::uint64_t V = std::uint64_t(c.vocab), d = std::uint64_t(c.hidden);
    return {{"transformer.wte (lm_head is tied to it)", V * d},
            {"transformer.wpe", std::uint64_t(c.context) * d},
            {"transformer.h.0.mlp.c_fc", 4 * d * d + 4 * d}};
}

std::vector<std::string> peer_args(const ModelConfig&) {
    return {}; // tools/torch_bench_step.py's default architecture
}
} // namespace gpt2

extern constinit const Family gpt2_family = {
    .name = "gpt2",
    .hf_model_type = "gpt2",
    .small_preset = "tiny",
    .plan_preset = "gpt2",
    .presets = gpt2::presets,
    .ffn_follows_hidden = true,
    .materializing_attention = true,
    .params = gpt2::count_params<std::size_t>,
    .params_f64 = gpt2::count_params<double>,
    .validate = gpt2::validate,
    .describe = gpt2::describe,
    .to_json = gpt2::to_json,
    .from_json = gpt2::from_json,
    .from_hf = gpt2::from_hf,
    .to_hf = gpt2::to_hf,
    .units = gpt2_units,
    .ignored_tensor = gpt2::ignored_tensor,
    .canonical_name = gpt2::canonical_name,
    .gemm_shapes = gpt2_gemm_shapes,
    .kernel_bytes = gpt2_kernel_bytes,
    .activation_bytes = gpt2_activation_bytes,
    .gradient_scratch_bytes = gpt2_gradient_scratch_bytes,
    .deepspeed_modules = gpt2::deepspeed_modules,
    .peer_args = gpt2::peer_args,
};

} // namespace shardlab
