// Residual add: out = a + b (out may alias a). Its backward is the identity on both inputs, which
// the model expresses by accumulating gradients into the residual stream.
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cstddef>

namespace shardlab::cpu {

// out[i] = a[i] + b[i], rounded once to T, for n values on the calling thread (the row kernels'
// own adds: the fused residual + LayerNorm, the embedding's token + position rows).
template <typename T>
void add_values(T* out, const T* a, const T* b, std::size_t n);

template <typename T>
void residual_forward(T* out, const T* a, const T* b, std::size_t n);

// dst += src (gradient accumulation along the residual stream).
template <typename T>
void accumulate(T* dst, const T* src, std::size_t n);

} // namespace shardlab::cpu
