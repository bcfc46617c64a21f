// Linear layer in GPT-2's Conv1D layout: out[N, OC] = inp[N, IC] @ weight[IC, OC] + bias[OC].
// Backward overwrites dinp and accumulates (+=) into dweight and dbias, so gradients add up over
// micro-batches. Column sums run column-parallel, so results do not depend on the thread count.
// `ws` holds gemm_workspace_floats<T>(N, max(IC, OC), max(IC, OC, N)) floats. (The model composes
// the same steps through Ops: gemm with bias, and bias_grad.)
#pragma once

#include "model/kernels/cpu/numeric.h"
#include <cstddef>

namespace shardlab::cpu {

template <typename T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int N, int IC, int OC,
                    float* ws);

template <typename T>
void linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                     int N, int IC, int OC, float* ws);

// Every row of out [rows, cols] set to bias [cols]: a GEMM with beta = 1 then adds onto it, so the
// bias costs 16-bit storage no extra rounding.
template <typename T>
void bias_rows(T* out, const T* bias, int rows, int cols);

// dst[c] += sum over rows of src[r, c] (fp32 / double accumulation, one rounding per column).
template <typename T>
void add_column_sums(T* dst, const T* src, int rows, int cols);

} // namespace shardlab::cpu
