// GPT-2 initialisation, seeded and identical on every rank and thread count: weights normal(0,
// 0.02), the two residual output projections normal(0, 0.02/sqrt(2L)), biases 0, LayerNorm
// weight 1 and bias 0. Each element's value depends only on (seed, tensor index, element index).
#pragma once

#include "model/param_layout.h"

#include <cstdint>
#include <vector>

namespace shardlab {

// Fills one unit's fp32 values (unit.numel of them).
void gpt2_init_unit(const ParamLayout& layout, int unit, std::uint64_t seed, float* out,
                    int layers);

// The whole model as fp32, unit after unit.
std::vector<std::vector<float>> gpt2_init(const ParamLayout& layout, std::uint64_t seed,
                                          int layers);

} // namespace shardlab
