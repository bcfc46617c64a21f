// GPT-2 initialisation, seeded and identical on every rank and thread count: weights normal(0,
// 0.02), the two residual output projections normal(0, 0.02/sqrt(2L)), biases 0, LayerNorm
// weight 1 and bias 0. Each element's value depends only on (seed, tensor index, element index)
// (model/param_init.h), so a model padded to any vocabulary multiple gets the same true weights;
// its padding is zero.
#pragma once

#include "model/param_init.h"
#include "model/param_layout.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace shardlab {

// Fills one unit's fp32 values (unit.numel of them).
void gpt2_init_unit(const ParamLayout& layout, int unit, std::uint64_t seed, float* out,
                    int layers);
// Fills elements [begin, begin + count) of one unit: the same values as gpt2_init_unit there, so
// a rank can make only the shard it owns and the model is the same for every rank count.
void gpt2_init_range(const ParamLayout& layout, int unit, std::uint64_t seed, int layers,
                     std::uint64_t begin, std::uint64_t count, float* out);

InitialValues gpt2_initial_values(const ParamLayout& layout, std::uint64_t seed, int layers);

// The whole model as fp32, unit after unit.
std::vector<std::vector<float>> gpt2_init(const ParamLayout& layout, std::uint64_t seed,
                                          int layers);

} // namespace shardlab
