// Rotary position embedding in Hugging Face's rotate-half layout (LlamaRotaryEmbedding +
// apply_rotary_pos_emb): in each head of D dimensions, pair j < D/2 is (x[j], x[j + D/2]),
// rotated by the angle p * f_j at sequence position p, f_j = theta^(-2j/D) or Llama 3's scaled
// frequency (model/kernels/rope_frequency.h):
//   y[j] = x[j] cos - x[j + D/2] sin,   y[j + D/2] = x[j + D/2] cos + x[j] sin.
// In place over `heads` consecutive heads of each of the B*T rows (row r is position r mod T),
// rows `stride` elements apart, so q and k are rotated inside a fused qkv row. Backward is the
// inverse rotation of the gradient (the transpose of a rotation), also in place.
#pragma once

#include "model/kernels/cpu/numeric.h"
#include "model/kernels/rope_frequency.h"

namespace shardlab::cpu {

template <typename T>
void rope_forward(T* x, int rows, int T_, int heads, int head_dim, int stride, const Rope& rope);

template <typename T>
void rope_backward(T* dx, int rows, int T_, int heads, int head_dim, int stride, const Rope& rope);

} // namespace shardlab::cpu
