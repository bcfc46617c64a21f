// GELU, tanh approximation (GPT-2's): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Backward overwrites dinp with gelu'(inp) * dout.
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cstddef>

namespace shardlab::cpu {

template <typename T>
void gelu_forward(T* out, const T* inp, std::size_t n);

template <typename T>
void gelu_backward(T* dinp, const T* inp, const T* dout, std::size_t n);

} // namespace shardlab::cpu
