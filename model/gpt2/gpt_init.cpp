// GPT-2's draws as a rule per tensor over model/param_init.h's counter-based streams.
#include "model/gpt2/gpt_init.h"

#include <cmath>

namespace shardlab {

namespace {
InitRuleFor gpt2_rule(int layers) {
    return [layers](const ParamInfo& p) -> InitRule {
        if (p.name.ends_with(".bias")) return {InitRule::zero, 0};
        if (p.name.ends_with("ln_1.weight") || p.name.ends_with("ln_2.weight") ||
            p.name.ends_with("ln_f.weight"))
            return {InitRule::one, 0};
        if (p.name.ends_with("c_proj.weight"))
            return {InitRule::normal, 0.02 / std::sqrt(2.0 * layers)};
        return {InitRule::normal, 0.02};
    };
}
} // namespace

void gpt2_init_range(const ParamLayout& layout, int unit, std::uint64_t seed, int layers,
                     std::uint64_t begin, std::uint64_t count, float* out) {
    init_range(layout, unit, seed, begin, count, out, gpt2_rule(layers));
}

void gpt2_init_unit(const ParamLayout& layout, int unit, std::uint64_t seed, float* out,
                    int layers) {
    gpt2_init_range(layout, unit, seed, layers, 0, layout.units()[unit].numel, out);
}

InitialValues gpt2_initial_values(const ParamLayout& layout, std::uint64_t seed, int layers) {
    return [&layout, seed, layers](int unit, std::uint64_t begin, std::uint64_t count, float* out) {
        gpt2_init_range(layout, unit, seed, layers, begin, count, out);
    };
}

std::vector<std::vector<float>> gpt2_init(const ParamLayout& layout, std::uint64_t seed,
                                          int layers) {
    return init_all(layout, gpt2_initial_values(layout, seed, layers));
}

} // namespace shardlab
