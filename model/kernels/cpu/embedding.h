// Token + position embedding: out[b, t] = wte[token[b, t]] + wpe[t]. Backward accumulates into
// dwte (rows of the tokens present) and dwpe; each row's sum is formed in the compute type and
// rounded once, in a fixed order, so the result is deterministic. wpe / dwpe null: no position
// table (Llama), out[b, t] = wte[token[b, t]].
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cstdint>

namespace shardlab::cpu {

template <typename T>
void embedding_forward(T* out, const std::uint16_t* tokens, const T* wte, const T* wpe, int B,
                       int T_, int C);

template <typename T>
void embedding_backward(T* dwte, T* dwpe, const T* dout, const std::uint16_t* tokens, int B, int T_,
                        int C, int V);

} // namespace shardlab::cpu
