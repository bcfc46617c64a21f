// Sampling text from a trained model: one full forward per new token over a window right-padded
// to the model's sequence length (causal attention ignores the padding), then a draw from the
// softmax at temperature tau. Every rank runs it with the same seed, so under ZeRO-3 — where a
// forward needs every rank's gathers — all ranks take the same path.
#pragma once

#include "model/model.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace shardlab {

std::vector<std::uint16_t> generate(Model& model, UnitParams& params,
                                    std::vector<std::uint16_t> prompt, int new_tokens,
                                    float temperature, std::uint64_t seed,
                                    const std::function<void()>& before_forward);

} // namespace shardlab
