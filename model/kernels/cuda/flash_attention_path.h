// Which of the two flash attention implementations runs for a storage dtype and head dim: the
// tile products on tensor cores (WMMA, flash_attention_wmma.h) for bf16 and fp16 whose head dim is
// a multiple of WMMA's 16, else on fp32 CUDA cores (flash_attention.h). Free of CUDA headers, so
// the tests can hold each path to its own error bound.
#pragma once

#include "core/dtype.h"

namespace shardlab::cuda {

constexpr bool flash_attention_on_tensor_cores(DType t, int head_dim) {
    return (t == DType::bf16 || t == DType::f16) && head_dim > 0 && head_dim % 16 == 0;
}

} // namespace shardlab::cuda
