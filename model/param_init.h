// Seeded initialisation for any family's layout: every element's value depends only on (seed,
// tensor index, element index) — counter-based normal draws (splitmix64 + Box-Muller), no
// generator state — so it is the same on every rank, thread count and vocabulary padding, and a
// rank can make only the shard it owns. A family says per tensor what it draws (InitRule).
#pragma once

#include "model/param_layout.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace shardlab {

struct InitRule {
    enum Kind { zero, one, normal } kind = normal;
    double std = 0.02; // for normal
};
using InitRuleFor = std::function<InitRule(const ParamInfo&)>;

// Fills elements [begin, begin + count) of one unit (padding past a tensor's numel: zero).
void init_range(const ParamLayout& layout, int unit, std::uint64_t seed, std::uint64_t begin,
                std::uint64_t count, float* out, const InitRuleFor& rule);

// Where a run's first parameters come from, asked one element range of one unit at a time (so
// nobody needs the whole model at once): fills `out` with elements [begin, begin + count).
using InitialValues =
    std::function<void(int unit, std::uint64_t begin, std::uint64_t count, float* out)>;
// From values already in memory, one vector per unit (tests, --init files); kept by reference.
InitialValues initial_values_from(const std::vector<std::vector<float>>& units);
// The whole model as fp32, unit after unit.
std::vector<std::vector<float>> init_all(const ParamLayout& layout, const InitialValues& values);

} // namespace shardlab
