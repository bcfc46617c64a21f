// Presets, validation and JSON for GPTConfig.
#include "model/gpt_config.h"

#include "core/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace shardlab {

namespace {
// wte, wpe, per block (ln_1, c_attn, attn c_proj, ln_2, c_fc, mlp c_proj), ln_f; in N's arithmetic.
template <typename N>
N count_params(const GPTConfig& c) {
    const N V = N(c.vocab), T = N(c.context), d = N(c.hidden), L = N(c.layers);
    const N block =
        2 * d + (d * 3 * d + 3 * d) + (d * d + d) + 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d);
    return V * d + T * d + L * block + 2 * d;
}
} // namespace

std::size_t GPTConfig::num_params() const {
    return count_params<std::size_t>(*this);
}

double GPTConfig::num_params_f64() const {
    return count_params<double>(*this);
}

void GPTConfig::validate() const {
    auto positive = [](int v, const char* name) {
        if (v <= 0) throw UsageError(fmt::format("{} must be positive, got {}", name, v));
    };
    positive(vocab, "vocab");
    positive(context, "context (seq)");
    positive(layers, "layers");
    positive(hidden, "hidden");
    positive(heads, "heads");
    positive(kv_heads, "kv-heads");
    if (hidden % heads != 0)
        throw UsageError(fmt::format("hidden {} is not divisible by heads {}; pick heads dividing "
                                     "hidden (e.g. --heads {})",
                                     hidden, heads, hidden % 64 == 0 ? hidden / 64 : 1));
    if (heads % kv_heads != 0)
        throw UsageError(fmt::format("heads {} is not a multiple of kv-heads {}", heads, kv_heads));
    if (kv_heads != heads)
        throw UsageError(
            "grouped-query attention (kv-heads < heads) is not implemented in the GPT-2 "
            "kernels yet; use kv-heads = heads");
    if (vocab > 65536)
        throw UsageError(fmt::format("vocab {} exceeds 65536 (tokens are uint16)", vocab));
}

std::string GPTConfig::describe() const {
    return fmt::format("L={} d={} H={} T={} V={} ({:.2f}M params)", layers, hidden, heads, context,
                       vocab, double(num_params()) / 1e6);
}

GPTConfig gpt_preset(const std::string& name) {
    auto make = [](int L, int d, int H, int T, int V) { return GPTConfig{V, T, L, d, H, H}; };
    if (name == "tiny") return make(4, 256, 4, 256, 256);
    if (name == "gpt2") return make(12, 768, 12, 1024, 50257);
    if (name == "gpt2-medium") return make(24, 1024, 16, 1024, 50257);
    if (name == "gpt2-large") return make(36, 1280, 20, 1024, 50257);
    if (name == "gpt2-xl") return make(48, 1600, 25, 1024, 50257);
    throw UsageError("unknown preset '" + name +
                     "'; use tiny, gpt2, gpt2-medium, gpt2-large or gpt2-xl");
}

nlohmann::json config_to_json(const GPTConfig& c) {
    return {{"vocab", c.vocab},   {"context", c.context}, {"layers", c.layers},
            {"hidden", c.hidden}, {"heads", c.heads},     {"kv_heads", c.kv_heads}};
}

GPTConfig config_from_json(const nlohmann::json& j) {
    GPTConfig c;
    try {
        c.vocab = j.at("vocab").get<int>();
        c.context = j.at("context").get<int>();
        c.layers = j.at("layers").get<int>();
        c.hidden = j.at("hidden").get<int>();
        c.heads = j.at("heads").get<int>();
        c.kv_heads = j.value("kv_heads", c.heads);
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("model config is incomplete: ") + e.what() +
                    "; it needs vocab, context, layers, hidden, heads");
    }
    c.validate();
    return c;
}

} // namespace shardlab
