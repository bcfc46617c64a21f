// Fused softmax + cross-entropy over logits [N, V] (natural log). Returns the mean loss over the
// N rows. With `dlogits_scale` != 0 it also overwrites the logits with their gradient,
// (softmax - onehot(target)) * dlogits_scale — the backward, fused so that the probabilities are
// never stored. (For a mean loss, dlogits_scale = 1/N times the loss scale.)
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cstdint>

namespace shardlab::cpu {

template <typename T>
double softmax_cross_entropy(T* logits, const std::uint16_t* targets, int N, int V,
                             float dlogits_scale);

} // namespace shardlab::cpu
