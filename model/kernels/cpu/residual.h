// Residual add: out = a + b (out may alias a). Its backward is the identity on both inputs, which
// the model expresses by accumulating gradients into the residual stream.
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cstddef>

namespace shardlab::cpu {

template <typename T>
void residual_forward(T* out, const T* a, const T* b, std::size_t n) {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) out[i] = from_acc<T>(to_acc(a[i]) + to_acc(b[i]));
}

// dst += src (gradient accumulation along the residual stream).
template <typename T>
void accumulate(T* dst, const T* src, std::size_t n) {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) dst[i] = from_acc<T>(to_acc(dst[i]) + to_acc(src[i]));
}

} // namespace shardlab::cpu
