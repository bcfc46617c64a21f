// Fused softmax + cross-entropy over the first V columns of logits [N, ld] (natural log; ld >= V,
// the columns V..ld-1 being the padded vocabulary, ignored). Returns the mean loss over the N rows.
// With `dlogits_scale` != 0 it also overwrites the logits with their gradient,
// (softmax - onehot(target)) * dlogits_scale, and the padded columns with 0 — the backward, fused
// so that the probabilities are never stored. (For a mean loss, dlogits_scale = 1/N times the loss
// scale.) The first V columns' results do not depend on ld: padding changes no bit of them.
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cstdint>

namespace shardlab::cpu {

template <typename T>
double softmax_cross_entropy(T* logits, const std::uint16_t* targets, int N, int V, int ld,
                             float dlogits_scale);

} // namespace shardlab::cpu
