// Causal multi-head self-attention on a fused qkv tensor [B, T, 3d] (q | k | v; head h is
// columns h*hd .. h*hd+hd of each). Forward writes out [B, T, d] and keeps the attention
// probabilities att [B, H, T, T] (zeros above the diagonal) for backward — the 5·a·s/h term of
// the activation model. Backward overwrites dqkv.
#pragma once

#include "model/kernels/cpu/numeric.h"

namespace shardlab::cpu {

template <typename T>
void attention_forward(T* out, T* att, const T* qkv, int B, int T_, int C, int H);

template <typename T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, int B, int T_, int C,
                        int H);

} // namespace shardlab::cpu
