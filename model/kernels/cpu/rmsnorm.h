// RMSNorm over the last dimension, as Hugging Face's LlamaRMSNorm computes it: each row scaled by
// 1 / sqrt(mean(x^2) + eps), then by the weight (no mean, no bias). Forward keeps each row's
// 1/rms for backward. Backward accumulates (+=) into dinp (the residual stream's gradient) and
// into dweight. Llama models follow it (issue 25); GPT-2 uses layernorm.h. In 16-bit storage
// Hugging Face rounds the normalized row to the storage type before the weight multiplies it;
// here w * x * r is rounded once (within bf16's bound of the float64 reference either way).
#pragma once

#include "model/kernels/cpu/numeric.h"

namespace shardlab::cpu {

template <typename T>
void rmsnorm_forward(T* out, acc_t<T>* rstd, const T* inp, const T* weight, int N, int C,
                     float eps);

template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                      const acc_t<T>* rstd, int N, int C);

} // namespace shardlab::cpu
