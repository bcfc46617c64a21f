// Parameter counts and units per architecture.
#include "plan/plan_model.h"

#include "core/error.h"
#include "model/model_presets.h"
#include "model/param_layout.h"

#include <fmt/format.h>

#include <cmath>

namespace shardlab {

std::size_t PlanModel::unpadded_params() const {
    const ModelConfig& c = config;
    const std::size_t padded_tables = c.arch == Architecture::llama && !c.tied_head ? 2 : 1;
    return params - padded_tables * std::size_t(c.padded_vocab() - c.vocab) * std::size_t(c.hidden);
}

namespace {
// Units, parameter count and the final unit from the layout a run builds (padding included).
void fill_units(PlanModel& m, const ModelConfig& c) {
    const ParamLayout layout(c);
    for (const auto& u : layout.units()) m.unit_numel.push_back(u.numel);
    m.params = layout.total_numel();
    m.final_unit = layout.final_unit();
    m.config = c;
}
} // namespace

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
    PlanModel m;
    m.name = name;
    fill_units(m, c);
    return m;
}

PlanModel plan_model_llama(int L, int d, int H, int Hkv, int ffn, int V, int T,
                           const std::string& name, bool tied, int vocab_multiple) {
    if (L <= 0 || d <= 0 || H <= 0 || Hkv <= 0 || ffn <= 0 || V <= 0 || T <= 0)
        throw UsageError("every model field must be positive");
    if (d % H != 0) throw UsageError(fmt::format("hidden {} is not divisible by heads {}", d, H));
    if (H % Hkv != 0)
        throw UsageError(
            fmt::format("kv-heads {} does not divide heads {}; use a divisor of {}", Hkv, H, H));
    PlanModel m;
    m.name = name;
    const ModelConfig c{V, T, L, d, H, Hkv, vocab_multiple, Architecture::llama, ffn, tied};
    // Not validated as a run's: a plan may ask about vocabularies past uint16 (Llama 3's 128256).
    fill_units(m, c); // model/llama/llama_layout.cpp: embed_tokens, layers, norm (+ lm_head)
    return m;
}

PlanModel plan_model_params_only(double params) {
    if (!(params >= 1) || params > 1e15)
        throw UsageError(
            fmt::format("--params {} is not a usable parameter count; give e.g. 7.5e9", params));
    PlanModel m;
    m.name = fmt::format("{:.3g} params", params);
    m.config = {0, 0, 0, 0, 0, 0, 1, Architecture::params_only, 0, true}; // no shape
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
                                c.context, name, c.tied_head, c.vocab_multiple);
    return plan_model_from_gpt2(c, name);
}

PlanModel plan_model_preset(const std::string& name) {
    return plan_model_from(model_preset(name), name);
}

} // namespace shardlab
