// SwiGLU, the gate of Llama's MLP (Hugging Face: down_proj(silu(gate_proj(x)) * up_proj(x))):
// out = silu(gate) * up element-wise, silu(g) = g * sigmoid(g). Backward writes (overwrites)
// both inputs' gradients: dgate = dout * up * silu'(g), dup = dout * silu(g), with
// silu'(g) = sigmoid(g) * (1 + g * (1 - sigmoid(g))).
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cstddef>

namespace shardlab::cpu {

template <typename T>
void swiglu_forward(T* out, const T* gate, const T* up, std::size_t n);

template <typename T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, std::size_t n);

} // namespace shardlab::cpu
