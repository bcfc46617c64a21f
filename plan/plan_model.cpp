// Parameter counts and units per architecture.
#include "plan/plan_model.h"

#include "core/error.h"
#include "model/model_presets.h"
#include "model/param_layout.h"

#include <fmt/format.h>

#include <cmath>

namespace shardlab {

ModelConfig PlanModel::gpt2_config() const {
    return ModelConfig{vocab, context, layers, hidden, heads, kv_heads, vocab_multiple};
}

int PlanModel::padded_vocab() const {
    return arch == Architecture::gpt2 ? gpt2_config().padded_vocab() : vocab;
}

std::size_t PlanModel::unpadded_params() const {
    return params - std::size_t(padded_vocab() - vocab) * std::size_t(hidden);
}

PlanModel plan_model_from_gpt2(const ModelConfig& c, const std::string& name) {
    // ModelConfig::validate speaks for training (its kernels); a plan runs none, so say what the
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

bool is_llama_preset(const std::string& name) {
    const ModelConfig* c = find_model_preset(name);
    return c && c->arch == Architecture::llama;
}

PlanModel plan_model_from(const ModelConfig& c, const std::string& name) {
    if (c.arch == Architecture::llama)
        return plan_model_llama(c.layers, c.hidden, c.heads, c.kv_heads, c.ffn(), c.vocab,
                                c.context, name, c.tied_head);
    return plan_model_from_gpt2(c, name);
}

PlanModel plan_model_preset(const std::string& name) {
    return plan_model_from(model_preset(name), name);
}

} // namespace shardlab
