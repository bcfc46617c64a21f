// Counter-based normal draws (splitmix64 + Box-Muller) and the per-tensor rules applied to a range.
#include "model/param_init.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace shardlab {

namespace {
std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Standard normal number i of stream (seed, tensor).
float normal(std::uint64_t seed, std::uint64_t tensor, std::uint64_t i) {
    const std::uint64_t h1 = mix(seed ^ mix(tensor * 0x100000001b3ull + (i << 1)));
    const std::uint64_t h2 = mix(h1 ^ 0xda942042e4dd58b5ull);
    const double u1 = (double(h1 >> 11) + 1.0) * 0x1p-53; // (0, 1]
    const double u2 = double(h2 >> 11) * 0x1p-53;
    return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}
} // namespace

void init_range(const ParamLayout& layout, int unit, std::uint64_t seed, std::uint64_t begin,
                std::uint64_t count, float* out, const InitRuleFor& rule) {
    // A global tensor index keeps streams distinct across units.
    std::uint64_t tensor = 0;
    for (int u = 0; u < unit; ++u) tensor += layout.units()[std::size_t(u)].params.size();
    for (const ParamInfo& p : layout.units()[std::size_t(unit)].params) {
        // The unit elements [first, last) of this tensor that fall in the range.
        const std::uint64_t first = std::max<std::uint64_t>(begin, p.offset);
        const std::uint64_t last = std::min<std::uint64_t>(begin + count, p.offset + p.numel);
        const InitRule r = rule(p);
        for (std::uint64_t e = first; e < last; ++e) // element e - p.offset of the tensor
            out[e - begin] = r.kind == InitRule::zero ? 0.0f
                             : r.kind == InitRule::one
                                 ? 1.0f
                                 : float(r.std * normal(seed, tensor, e - p.offset));
        // Padding rows (past V): zero, and the draws above do not depend on the padding.
        const std::uint64_t pad_first = std::max<std::uint64_t>(begin, p.offset + p.numel);
        const std::uint64_t pad_last = std::min<std::uint64_t>(begin + count, p.offset + p.stored);
        for (std::uint64_t e = pad_first; e < pad_last; ++e) out[e - begin] = 0.0f;
        ++tensor;
    }
}

InitialValues initial_values_from(const std::vector<std::vector<float>>& units) {
    return [&units](int unit, std::uint64_t begin, std::uint64_t count, float* out) {
        std::copy_n(units[std::size_t(unit)].begin() + std::ptrdiff_t(begin), count, out);
    };
}

std::vector<std::vector<float>> init_all(const ParamLayout& layout, const InitialValues& values) {
    std::vector<std::vector<float>> units;
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        units.emplace_back(layout.units()[u].numel);
        values(int(u), 0, layout.units()[u].numel, units.back().data());
    }
    return units;
}

} // namespace shardlab
