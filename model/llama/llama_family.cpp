// The Llama family's descriptor (model/family.h): Hugging Face's LlamaForCausalLM — RMSNorm,
// rotary positions (Llama 3.1's rope_scaling included), a SwiGLU MLP ffn wide, grouped-query
// attention, no biases, the head tied or not. Its facts: presets, parameter count and rules,
// configs on disk, weight names; the layout (llama_layout.h) and the costs (llama_costs.h) are
// beside it.
#include "core/error.h"
#include "model/family.h"
#include "model/llama/llama_costs.h"
#include "model/llama/llama_layout.h"
#include "model/model_presets.h"
#include "model/param_layout.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace shardlab {

// Named, not anonymous: the library is a unity build, and every family names its parts alike.
namespace llama {
// No vocabulary padding until the Llama model decides its storage (plan counts the model as
// Hugging Face holds it).
constexpr ModelConfig preset(int L, int d, int H, int Hkv, int ffn, int V, int T, bool tied,
                             double rope_theta, double eps) {
    ModelConfig c{V, T, L, d, H, Hkv, 1};
    c.arch = Architecture::llama;
    c.ffn_width = ffn;
    c.tied_head = tied;
    c.rope_theta = rope_theta;
    c.norm_eps = eps;
    return c;
}

// Llama 3.1 / 3.2's published rope_scaling: factor, low and high frequency factors, the context
// the frequencies were trained at.
constexpr ModelConfig rope_scaled(ModelConfig c, double factor, double low, double high,
                                  int context) {
    c.rope_factor = factor, c.rope_low_freq = low, c.rope_high_freq = high;
    c.rope_original_context = context;
    return c;
}

// Each its model's published config.json; tests/test_plan.cpp holds the published counts.
constexpr ModelPreset kPresets[] = {
    // For tests: tiny's size, grouped-query attention, an untied head, an ffn not 4 x hidden
    // (688 = 8/3 x 256 rounded up to a multiple of 16, Llama's rule).
    {"tiny-llama", preset(4, 256, 4, 2, 688, 256, 256, false, 1e4, 1e-5)},
    {"smollm-135m", preset(30, 576, 9, 3, 1536, 49152, 2048, true, 1e4, 1e-5)},
    {"tinyllama-1.1b", preset(22, 2048, 32, 4, 5632, 32000, 2048, false, 1e4, 1e-5)},
    {"llama-3.2-1b",
     rope_scaled(preset(16, 2048, 32, 8, 8192, 128256, 131072, true, 5e5, 1e-5), 32, 1, 4, 8192)},
    {"llama-3-8b", preset(32, 4096, 32, 8, 14336, 128256, 8192, false, 5e5, 1e-5)},
    {"7b", preset(32, 4096, 32, 32, 11008, 32000, 4096, false, 1e4, 1e-5)}, // Llama 2
    {"13b", preset(40, 5120, 40, 40, 13824, 32000, 4096, false, 1e4, 1e-5)},
    {"70b", preset(80, 8192, 64, 8, 28672, 32000, 4096, false, 1e4, 1e-5)},
};

std::span<const ModelPreset> presets() {
    return kPresets;
}

// embed_tokens, per block (q, k, v, o, gate, up, down, two RMSNorm weights), the final norm, and
// lm_head unless tied; in N's arithmetic; `rows`: the token embedding's rows (V, or Vp stored).
template <typename N>
N count_params(const ModelConfig& c, int rows) {
    const N V = N(rows), d = N(c.hidden), L = N(c.layers);
    const N kv = d / N(c.heads) * N(c.kv_heads), f = N(c.ffn());
    const N block = 2 * d * d + 2 * d * kv + 3 * d * f + 2 * d;
    return V * d + L * block + d + (c.tied_head ? N(0) : V * d); // lm_head padded as embed_tokens
}

void validate(const ModelConfig& c) {
    if (c.rope_factor != 0 && !(c.rope_factor >= 1 && c.rope_low_freq > 0 &&
                                c.rope_high_freq > c.rope_low_freq && c.rope_original_context > 0))
        throw UsageError(fmt::format(
            "llama rope_scaling needs factor >= 1, 0 < low_freq_factor < high_freq_factor and "
            "original_max_position_embeddings > 0, got {}, {}, {}, {}",
            c.rope_factor, c.rope_low_freq, c.rope_high_freq, c.rope_original_context));
    if (!(c.rope_theta > 0) || !(c.norm_eps > 0 && c.norm_eps < 1))
        throw UsageError(
            fmt::format("llama needs rope_theta > 0 and 0 < norm_eps < 1, got {} and {}",
                        c.rope_theta, c.norm_eps));
    if (c.head_dim() % 2 != 0)
        throw UsageError(fmt::format("RoPE rotates pairs of a head's dimensions: hidden / heads = "
                                     "{} must be even; pick other --heads",
                                     c.head_dim()));
}

std::string describe(const ModelConfig& c) {
    return fmt::format("llama L={} d={} H={} Hkv={} ffn={} T={} V={} {}", c.layers, c.hidden,
                       c.heads, c.kv_heads, c.ffn(), c.context, c.vocab,
                       c.tied_head ? "tied" : "untied") +
           (c.rope_factor > 0 ? fmt::format(" rope x{:g}", c.rope_factor) : "");
}

void to_json(const ModelConfig& c, nlohmann::json& j) {
    j["ffn"] = c.ffn();
    j["rope_theta"] = c.rope_theta;
    j["rms_eps"] = c.norm_eps;
    j["tied"] = c.tied_head;
    if (c.rope_factor > 0)
        j["rope_scaling"] = {{"factor", c.rope_factor},
                             {"low_freq_factor", c.rope_low_freq},
                             {"high_freq_factor", c.rope_high_freq},
                             {"original_max_position_embeddings", c.rope_original_context}};
}

void from_json(const nlohmann::json& j, ModelConfig& c) {
    const std::string where = "model config";
    c.ffn_width = config_int(j, "ffn", where);
    c.rope_theta = config_number(j, "rope_theta", where);
    c.norm_eps = config_number(j, "rms_eps", where);
    c.tied_head = config_bool(j, "tied", where);
    if (!j.contains("rope_scaling")) return;
    const nlohmann::json& r = j.at("rope_scaling");
    const std::string at = where + " rope_scaling";
    c.rope_factor = config_number(r, "factor", at);
    c.rope_low_freq = config_number(r, "low_freq_factor", at);
    c.rope_high_freq = config_number(r, "high_freq_factor", at);
    c.rope_original_context = config_int(r, "original_max_position_embeddings", at);
}

void refuse_unless(bool ok, const std::string& where, const std::string& what) {
    if (!ok) throw UsageError(fmt::format("{}: {}", where, what));
}

bool given(const nlohmann::json& j, const char* key) {
    return j.contains(key) && !j[key].is_null();
}

// Llama 3.1 / 3.2's {"rope_type": "llama3", factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings}; any other kind (linear, dynamic, yarn, ...) is refused.
void read_rope_scaling(const nlohmann::json& r, ModelConfig& c, const std::string& where) {
    refuse_unless(r.is_object(), where, "\"rope_scaling\" is not an object");
    const std::string type =
        r.contains("rope_type") ? r.value("rope_type", "") : r.value("type", "");
    refuse_unless(type == "llama3", where,
                  fmt::format("rope_scaling of type '{}': shardlab computes Llama 3's (\"llama3\") "
                              "only",
                              type));
    const std::string at = where + " rope_scaling";
    c.rope_factor = config_number(r, "factor", at);
    c.rope_low_freq = config_number(r, "low_freq_factor", at);
    c.rope_high_freq = config_number(r, "high_freq_factor", at);
    c.rope_original_context = config_int(r, "original_max_position_embeddings", at);
}

// Hugging Face's defaults where a field may be absent (LlamaConfig's).
void from_hf(const nlohmann::json& j, const std::string& where, ModelConfig& c) {
    c.vocab = config_int(j, "vocab_size", where);
    c.context = config_int(j, "max_position_embeddings", where);
    c.layers = config_int(j, "num_hidden_layers", where);
    c.hidden = config_int(j, "hidden_size", where);
    c.heads = config_int(j, "num_attention_heads", where);
    c.kv_heads =
        given(j, "num_key_value_heads") ? config_int(j, "num_key_value_heads", where) : c.heads;
    c.ffn_width = config_int(j, "intermediate_size", where);
    c.tied_head = given(j, "tie_word_embeddings") && config_bool(j, "tie_word_embeddings", where);
    c.rope_theta = given(j, "rope_theta") ? config_number(j, "rope_theta", where) : 10000.0;
    c.norm_eps = given(j, "rms_norm_eps") ? config_number(j, "rms_norm_eps", where) : 1e-6;
    if (given(j, "rope_scaling")) read_rope_scaling(j["rope_scaling"], c, where);
    refuse_unless(!j.value("attention_bias", false) && !j.value("mlp_bias", false), where,
                  "attention_bias / mlp_bias are set; shardlab's Llama has no biases");
    refuse_unless(j.value("hidden_act", "silu") == "silu", where,
                  "hidden_act is not \"silu\"; shardlab's Llama MLP is SwiGLU");
    refuse_unless(!given(j, "head_dim") ||
                      (c.heads > 0 && config_int(j, "head_dim", where) == c.hidden / c.heads),
                  where, "head_dim differs from hidden_size / num_attention_heads");
}

nlohmann::json to_hf(const ModelConfig& c) {
    return {{"model_type", "llama"},
            {"architectures", nlohmann::json::array({"LlamaForCausalLM"})},
            {"vocab_size", c.vocab},
            {"max_position_embeddings", c.context},
            {"num_hidden_layers", c.layers},
            {"hidden_size", c.hidden},
            {"num_attention_heads", c.heads},
            {"num_key_value_heads", c.kv_heads},
            {"head_dim", c.head_dim()},
            {"intermediate_size", c.ffn()},
            {"tie_word_embeddings", c.tied_head},
            {"rope_theta", c.rope_theta},
            {"rms_norm_eps", c.norm_eps},
            {"hidden_act", "silu"},
            {"attention_bias", false},
            {"mlp_bias", false},
            {"rope_scaling",
             c.rope_factor > 0
                 ? nlohmann::json{{"rope_type", "llama3"},
                                  {"factor", c.rope_factor},
                                  {"low_freq_factor", c.rope_low_freq},
                                  {"high_freq_factor", c.rope_high_freq},
                                  {"original_max_position_embeddings", c.rope_original_context}}
                 : nlohmann::json(nullptr)}};
}

// A tied head's saved copy of the embedding, and the rotary frequencies (recomputed from
// rope_theta) that older files saved.
bool ignored_tensor(const std::string& name, const ModelConfig& c) {
    return (c.tied_head && name == "lm_head.weight") || name.ends_with(".rotary_emb.inv_freq");
}

std::string canonical_name(const std::string& name) {
    return name; // Hugging Face's names, as the layout spells them
}

// LlamaForCausalLM's candidates: no biases, an untied lm_head as large as embed_tokens.
std::vector<DeepSpeedModule> deepspeed_modules(const ModelConfig& c) {
    const std::uint64_t V = std::uint64_t(c.vocab), d = std::uint64_t(c.hidden);
    return {{"model.embed_tokens", V * d},
            {"model.layers.0.self_attn.q_proj", d * d},
            {"model.layers.0.mlp.gate_proj", d * std::uint64_t(c.ffn())}};
}

// The same Llama, as Hugging Face's modules compute it.
std::vector<std::string> peer_args(const ModelConfig& c) {
    auto n = [](auto v) { return fmt::format("{}", v); };
    std::vector<std::string> a = {"--arch",    "llama",      "--kv-heads",   n(c.kv_heads),
                                  "--ffn",     n(c.ffn()),   "--rope-theta", n(c.rope_theta),
                                  "--rms-eps", n(c.norm_eps)};
    if (c.tied_head) a.push_back("--tied");
    return a;
}
} // namespace llama

extern constinit const Family llama_family = {
    .name = "llama",
    .hf_model_type = "llama",
    .small_preset = "tiny-llama",
    .plan_preset = "7b",
    .presets = llama::presets,
    .ffn_follows_hidden = false,
    .materializing_attention = false,
    .params = llama::count_params<std::size_t>,
    .params_f64 = llama::count_params<double>,
    .validate = llama::validate,
    .describe = llama::describe,
    .to_json = llama::to_json,
    .from_json = llama::from_json,
    .from_hf = llama::from_hf,
    .to_hf = llama::to_hf,
    .units = llama_units,
    .ignored_tensor = llama::ignored_tensor,
    .canonical_name = llama::canonical_name,
    .gemm_shapes = llama_gemm_shapes,
    .kernel_bytes = llama_kernel_bytes,
    .activation_bytes = llama_activation_bytes,
    .gradient_scratch_bytes = llama_gradient_scratch_bytes,
    .deepspeed_modules = llama::deepspeed_modules,
    .peer_args = llama::peer_args,
};

} // namespace shardlab
