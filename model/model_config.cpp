// Parameter counts, presets, validation and JSON for ModelConfig.
#include "model/model_config.h"

#include "core/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <climits>
#include <cstdint>

namespace shardlab {

namespace {
// In N's arithmetic; `rows`: the token embedding's rows (V, or Vp for the stored count).
// GPT-2: wte, wpe, per block (ln_1, c_attn, attn c_proj, ln_2, c_fc, mlp c_proj), ln_f.
// Llama: embed_tokens, per block (q, k, v, o, gate, up, down, two RMSNorm weights), the final norm,
// and lm_head unless tied (Hugging Face's LlamaForCausalLM; no biases, no position table).
template <typename N>
N count_params(const ModelConfig& c, int rows) {
    const N V = N(rows), T = N(c.context), d = N(c.hidden), L = N(c.layers);
    if (c.arch == Architecture::llama) {
        const N kv = d / N(c.heads) * N(c.kv_heads), f = N(c.ffn());
        const N block = 2 * d * d + 2 * d * kv + 3 * d * f + 2 * d;
        return V * d + L * block + d +
               (c.tied_head ? N(0) : V * d); // lm_head padded as embed_tokens
    }
    const N block =
        2 * d + (d * 3 * d + 3 * d) + (d * d + d) + 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d);
    return V * d + T * d + L * block + 2 * d;
}
} // namespace

int ModelConfig::padded_vocab() const {
    const long long m = vocab_multiple > 0 ? vocab_multiple : 1;
    return int((vocab + m - 1) / m * m);
}

std::size_t ModelConfig::num_params() const {
    return count_params<std::size_t>(*this, vocab);
}

std::size_t ModelConfig::num_params_stored() const {
    return count_params<std::size_t>(*this, padded_vocab());
}

double ModelConfig::num_params_f64() const {
    return count_params<double>(*this, vocab);
}

void ModelConfig::validate() const {
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
    // Token ids are stored as uint16, but a larger vocabulary (Llama 3's 128,256) still trains on
    // data whose ids fit; only sampling could make an id past 65535 (refused in train's checks).
    if (vocab > kMaxVocab)
        throw UsageError(fmt::format("vocab {} exceeds {}; no model shardlab knows is that large",
                                     vocab, kMaxVocab));
    if (ffn_width < 0) throw UsageError(fmt::format("ffn must be positive, got {}", ffn_width));
    if (arch == Architecture::params_only)
        throw UsageError("a bare parameter count is no model; give an architecture's shape");
    if (arch == Architecture::llama) {
        if (rope_factor != 0 && !(rope_factor >= 1 && rope_low_freq > 0 &&
                                  rope_high_freq > rope_low_freq && rope_original_context > 0))
            throw UsageError(fmt::format(
                "llama rope_scaling needs factor >= 1, 0 < low_freq_factor < high_freq_factor and "
                "original_max_position_embeddings > 0, got {}, {}, {}, {}",
                rope_factor, rope_low_freq, rope_high_freq, rope_original_context));
        if (!(rope_theta > 0) || !(norm_eps > 0 && norm_eps < 1))
            throw UsageError(fmt::format("llama needs rope_theta > 0 and 0 < norm_eps < 1, got "
                                         "{} and {}",
                                         rope_theta, norm_eps));
        if (head_dim() % 2 != 0)
            throw UsageError(fmt::format("RoPE rotates pairs of a head's dimensions: hidden / "
                                         "heads = {} must be even; pick other --heads",
                                         head_dim()));
        return;
    }
    if (ffn() != 4 * hidden)
        throw UsageError(fmt::format("GPT-2's MLP is 4 x hidden = {} wide, not {}; another width "
                                     "is the llama architecture (--arch llama --ffn {})",
                                     4 * hidden, ffn(), ffn()));
    if (!tied_head)
        throw UsageError("GPT-2's output head is the token embedding; an untied head is the "
                         "llama architecture (--arch llama)");
    if (kv_heads != heads)
        throw UsageError(
            "grouped-query attention (kv-heads < heads) is not implemented in the GPT-2 "
            "kernels yet; use kv-heads = heads");
}

std::string ModelConfig::describe() const {
    const std::string shape =
        arch == Architecture::llama
            ? fmt::format("llama L={} d={} H={} Hkv={} ffn={} T={} V={} {}", layers, hidden, heads,
                          kv_heads, ffn(), context, vocab, tied_head ? "tied" : "untied") +
                  (rope_factor > 0 ? fmt::format(" rope x{:g}", rope_factor) : "")
            : fmt::format("L={} d={} H={} T={} V={}", layers, hidden, heads, context, vocab);
    if (padded_vocab() == vocab)
        return fmt::format("{} ({:.2f}M params)", shape, double(num_params()) / 1e6);
    return fmt::format("{} ({:.2f}M params; {:.2f}M stored, V padded to {})", shape,
                       double(num_params()) / 1e6, double(num_params_stored()) / 1e6,
                       padded_vocab());
}

nlohmann::json config_to_json(const ModelConfig& c) {
    nlohmann::json j = {{"arch", architecture_name(c.arch)},
                        {"vocab", c.vocab},
                        {"context", c.context},
                        {"layers", c.layers},
                        {"hidden", c.hidden},
                        {"heads", c.heads},
                        {"kv_heads", c.kv_heads}};
    if (c.arch == Architecture::llama) {
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
    return j;
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

double config_number(const nlohmann::json& j, const char* key) {
    const nlohmann::json& v = j.at(key);
    if (!v.is_number()) throw UsageError(fmt::format("model config \"{}\" is not a number", key));
    return v.get<double>();
}

Architecture config_arch(const nlohmann::json& j) {
    if (!j.contains("arch")) return Architecture::gpt2; // written before "arch" was
    const nlohmann::json& v = j.at("arch");
    if (!v.is_string() || (v != "gpt2" && v != "llama"))
        throw UsageError("model config \"arch\" is " +
                         (v.is_string() ? v.get<std::string>() : std::string(v.type_name())) +
                         ", not gpt2 or llama");
    return parse_architecture(v.get<std::string>());
}
} // namespace

ModelConfig config_from_json(const nlohmann::json& j) {
    ModelConfig c;
    try {
        c.arch = config_arch(j);
        c.vocab = config_int(j, "vocab");
        c.context = config_int(j, "context");
        c.layers = config_int(j, "layers");
        c.hidden = config_int(j, "hidden");
        c.heads = config_int(j, "heads");
        c.kv_heads = j.contains("kv_heads") ? config_int(j, "kv_heads") : c.heads;
        if (c.arch == Architecture::llama) {
            c.ffn_width = config_int(j, "ffn");
            c.rope_theta = config_number(j, "rope_theta");
            c.norm_eps = config_number(j, "rms_eps");
            const nlohmann::json& tied = j.at("tied");
            if (!tied.is_boolean()) throw UsageError("model config \"tied\" is not true or false");
            c.tied_head = tied.get<bool>();
            if (j.contains("rope_scaling")) {
                const nlohmann::json& r = j.at("rope_scaling");
                c.rope_factor = config_number(r, "factor");
                c.rope_low_freq = config_number(r, "low_freq_factor");
                c.rope_high_freq = config_number(r, "high_freq_factor");
                c.rope_original_context = config_int(r, "original_max_position_embeddings");
            }
        }
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(
            std::string("model config is incomplete: ") + e.what() +
            "; it needs vocab, context, layers, hidden, heads (a llama also ffn, rope_theta, "
            "rms_eps, tied)");
    }
    c.validate();
    return c;
}

} // namespace shardlab
