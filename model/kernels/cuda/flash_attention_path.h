// Which flash attention implementation runs for a storage dtype and head dim: the tile products on
// tensor cores for bf16 and fp16 whose head dim is a multiple of 16 (the tensor cores' k), else on
// fp32 CUDA cores (flash_attention.h). On tensor cores, two implementations of one scheme: PTX
// mma.sync with the softmax in registers (flash_attention_mma.h, the default) and WMMA with the
// scores through shared memory (flash_attention_wmma.h), chosen by $SHARDLAB_CUDA_FLASH so that a
// GPU run can time one against the other; mma_regs is the mma kernels with each warp's row
// operands held in registers across the walk (the same bits as mma). Free of CUDA headers, so the
// tests can hold each path to its own error bound.
#pragma once

#include "core/dtype.h"

namespace shardlab::cuda {

enum class TensorCoreFlash { mma, wmma, mma_regs };

constexpr bool flash_attention_on_tensor_cores(DType t, int head_dim) {
    return (t == DType::bf16 || t == DType::f16) && head_dim > 0 && head_dim % 16 == 0;
}

} // namespace shardlab::cuda
