// Flash attention on the CPU (FlashAttention-2's scheme): the same causal multi-head attention as
// attention.h over a fused qkv [B, T, 3d], computed in query tiles x key tiles with an online
// softmax, so the B*H*T*T probabilities are never stored. Forward writes out [B, T, d] and
// lse [B, H, T] (fp32, natural log of each query row's sum of exp(scaled scores)); backward
// recomputes the probabilities tile by tile from lse and overwrites dqkv. lse is acc_t<T>: fp32
// for the stored dtypes (the Ops contract), double for the float64 finite-difference checks.
#pragma once

#include "model/kernels/cpu/numeric.h"

namespace shardlab::cpu {

template <typename T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* qkv, int B, int T_, int C, int H);

// out is forward's stored (rounded) output: backward's D_i = rowsum(dO_i * O_i) reads it.
template <typename T>
void flash_attention_backward(T* dqkv, const T* dout, const T* qkv, const T* out,
                              const acc_t<T>* lse, int B, int T_, int C, int H);

} // namespace shardlab::cpu
