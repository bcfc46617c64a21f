// Presets, validation and JSON for GPTConfig.
#include "model/gpt_config.h"

#include "core/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <climits>
#include <cstdint>

namespace shardlab {

namespace {
// wte, wpe, per block (ln_1, c_attn, attn c_proj, ln_2, c_fc, mlp c_proj), ln_f; in N's arithmetic.
// `rows`: wte's rows (V, or Vp for the stored count).
template <typename N>
N count_params(const GPTConfig& c, int rows) {
    const N V = N(rows), T = N(c.context), d = N(c.hidden), L = N(c.layers);
    const N block =
        2 * d + (d * 3 * d + 3 * d) + (d * d + d) + 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d);
    return V * d + T * d + L * block + 2 * d;
}
} // namespace

int GPTConfig::padded_vocab() const {
    const long long m = vocab_multiple > 0 ? vocab_multiple : 1;
    return int((vocab + m - 1) / m * m);
}

std::size_t GPTConfig::num_params() const {
    return count_params<std::size_t>(*this, vocab);
}

std::size_t GPTConfig::num_params_stored() const {
    return count_params<std::size_t>(*this, padded_vocab());
}

double GPTConfig::num_params_f64() const {
    return count_params<double>(*this, vocab);
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
    if (vocab_multiple < 1 || vocab_multiple > 65536)
        throw UsageError(fmt::format("--vocab-multiple {} is outside 1..65536; use 128 (the "
                                     "default) or 1 for no padding",
                                     vocab_multiple));
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
    const std::string shape =
        fmt::format("L={} d={} H={} T={} V={}", layers, hidden, heads, context, vocab);
    if (padded_vocab() == vocab)
        return fmt::format("{} ({:.2f}M params)", shape, double(num_params()) / 1e6);
    return fmt::format("{} ({:.2f}M params; {:.2f}M stored, V padded to {})", shape,
                       double(num_params()) / 1e6, double(num_params_stored()) / 1e6,
                       padded_vocab());
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

namespace {
// One field, a whole number an int holds. get<int>() would cast 1e20 (undefined behaviour) or
// wrap 2^32 + 3 to 3, and a corrupt config would pass validate() as another model.
int config_int(const nlohmann::json& j, const char* key) {
    const nlohmann::json& v = j.at(key);
    // Only scalars are quoted: dump() of a deeply nested value recurses once per level.
    const std::string shown = v.is_primitive() ? v.dump() : "a JSON " + std::string(v.type_name());
    if (!v.is_number_integer())
        throw UsageError(fmt::format("model config \"{}\" is {}, not a whole number", key, shown));
    const bool fits = v.is_number_unsigned()
                          ? v.get<std::uint64_t>() <= std::uint64_t(INT_MAX)
                          : v.get<std::int64_t>() >= INT_MIN && v.get<std::int64_t>() <= INT_MAX;
    if (!fits) throw UsageError(fmt::format("model config \"{}\" is {}, out of range", key, shown));
    return v.get<int>();
}
} // namespace

GPTConfig config_from_json(const nlohmann::json& j) {
    GPTConfig c;
    try {
        c.vocab = config_int(j, "vocab");
        c.context = config_int(j, "context");
        c.layers = config_int(j, "layers");
        c.hidden = config_int(j, "hidden");
        c.heads = config_int(j, "heads");
        c.kv_heads = j.contains("kv_heads") ? config_int(j, "kv_heads") : c.heads;
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(std::string("model config is incomplete: ") + e.what() +
                         "; it needs vocab, context, layers, hidden, heads");
    }
    c.validate();
    return c;
}

} // namespace shardlab
