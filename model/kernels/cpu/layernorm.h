// LayerNorm over the last dimension (eps 1e-5, biased variance), as GPT-2 uses it. Forward keeps
// each row's mean and 1/std (in the compute type) for backward. Backward accumulates (+=) into
// dinp — the residual stream's gradient — and into dweight / dbias.
#pragma once

#include "model/kernels/cpu/numeric.h"

namespace shardlab::cpu {

template <typename T>
void layernorm_forward(T* out, acc_t<T>* mean, acc_t<T>* rstd, const T* inp, const T* weight,
                       const T* bias, int N, int C);

// The residual add and the LayerNorm after it in one pass over the rows: residual += x (rounded
// to T), then out = layernorm(residual) — the same bits as residual add then layernorm_forward.
template <typename T>
void residual_layernorm_forward(T* residual, const T* x, T* out, acc_t<T>* mean, acc_t<T>* rstd,
                                const T* weight, const T* bias, int N, int C);

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const acc_t<T>* mean, const acc_t<T>* rstd, int N, int C);

} // namespace shardlab::cpu
