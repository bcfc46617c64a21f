// Parameter counts and units per architecture.
#include "plan/plan_model.h"

#include "core/error.h"
#include "model/param_layout.h"

#include <fmt/format.h>

#include <cmath>

namespace shardlab {

GPTConfig PlanModel::gpt2_config() const {
    return GPTConfig{vocab, context, layers, hidden, heads, kv_heads, vocab_multiple};
}

int PlanModel::padded_vocab() const {
    return arch == Architecture::gpt2 ? gpt2_config().padded_vocab() : vocab;
}

std::size_t PlanModel::unpadded_params() const {
    return params - std::size_t(padded_vocab() - vocab) * std::size_t(hidden);
}

PlanModel plan_model_from_gpt2(const GPTConfig& c, const std::string& name) {
    // GPTConfig::validate speaks for training (its kernels); a plan runs none, so say what the
    // architecture is and where grouped-query attention is modelled.
    if (c.kv_heads != c.heads && c.kv_heads > 0 && c.heads > 0)
        throw UsageError(fmt::format(
            "GPT-2 has one key/value head per query head (kv-heads = heads = {}); grouped-query "
            "attention is modelled by the llama architecture, e.g. shardlab plan --arch llama "
            "--layers {} --hidden {} --heads {} --kv-heads {} --ffn {} --vocab {} --seq {}",
            c.heads, c.layers, c.hidden, c.heads, c.kv_heads, c.ffn(), c.vocab, c.context));
    c.validate();
    PlanModel m{name,    Architecture::gpt2, c.layers, c.hidden, c.heads, c.kv_heads, c.ffn(),
                c.vocab, c.context,          0,        {},       0,       0};
    m.vocab_multiple = c.vocab_multiple;
    const ParamLayout layout(c);
    for (const auto& u : layout.units()) m.unit_numel.push_back(u.numel);
    m.params = layout.total_numel();
    m.final_unit = layout.final_unit();
    return m;
}

PlanModel plan_model_llama(int L, int d, int H, int Hkv, int ffn, int V, int T,
                           const std::string& name, bool tied) {
    if (L <= 0 || d <= 0 || H <= 0 || Hkv <= 0 || ffn <= 0 || V <= 0 || T <= 0)
        throw UsageError("every model field must be positive");
    if (d % H != 0) throw UsageError(fmt::format("hidden {} is not divisible by heads {}", d, H));
    if (H % Hkv != 0)
        throw UsageError(
            fmt::format("kv-heads {} does not divide heads {}; use a divisor of {}", Hkv, H, H));
    PlanModel m{name, Architecture::llama, L, d, H, Hkv, ffn, V, T, 0, {}, 0, 0};
    const std::size_t D = d, kv = std::size_t(d) / H * Hkv;
    const std::size_t block =
        2 * D * D + 2 * D * kv + 3 * D * std::size_t(ffn) + 2 * D; // q,o,k,v,mlp,norms
    m.unit_numel.push_back(std::size_t(V) * D);                    // token embedding
    for (int i = 0; i < L; ++i) m.unit_numel.push_back(block);
    // The final norm, and the output head unless it is the token embedding (tied).
    m.unit_numel.push_back(D + (tied ? 0 : std::size_t(V) * D));
    m.final_unit = L + 1;
    m.tied_head = tied;
    for (auto n : m.unit_numel) m.params += n;
    return m;
}

PlanModel plan_model_params_only(double params) {
    if (!(params >= 1) || params > 1e15)
        throw UsageError(
            fmt::format("--params {} is not a usable parameter count; give e.g. 7.5e9", params));
    PlanModel m;
    m.name = fmt::format("{:.3g} params", params);
    m.arch = Architecture::params_only;
    m.params = std::size_t(std::llround(params));
    m.unit_numel = {m.params};
    return m;
}

namespace {
// The Llama-shaped models' published configurations (each model's Hugging Face config.json:
// num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, intermediate_size,
// vocab_size, max_position_embeddings, tie_word_embeddings).
struct LlamaShape {
    const char* name;
    int layers, hidden, heads, kv_heads, ffn, vocab, context;
    bool tied;
};
constexpr LlamaShape kLlamaShapes[] = {
    {"7b", 32, 4096, 32, 32, 11008, 32000, 4096, false}, // Llama-2-7b
    {"13b", 40, 5120, 40, 40, 13824, 32000, 4096, false},
    {"70b", 80, 8192, 64, 8, 28672, 32000, 4096, false},
    {"smollm-135m", 30, 576, 9, 3, 1536, 49152, 2048, true}, // HuggingFaceTB/SmolLM-135M
    {"tinyllama-1.1b", 22, 2048, 32, 4, 5632, 32000, 2048, false},
    {"llama-3.2-1b", 16, 2048, 32, 8, 8192, 128256, 131072, true},
    {"llama-3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, false},
};
} // namespace

bool is_llama_preset(const std::string& name) {
    for (const LlamaShape& s : kLlamaShapes)
        if (name == s.name) return true;
    return false;
}

PlanModel plan_model_preset(const std::string& name) {
    for (const LlamaShape& s : kLlamaShapes)
        if (name == s.name)
            return plan_model_llama(s.layers, s.hidden, s.heads, s.kv_heads, s.ffn, s.vocab,
                                    s.context, name, s.tied);
    try {
        return plan_model_from_gpt2(gpt_preset(name), name);
    } catch (const UsageError&) {
        throw UsageError("unknown preset '" + name + "'; use " + std::string(kPlanPresets));
    }
}

} // namespace shardlab
