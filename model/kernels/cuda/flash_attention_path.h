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

// Whether mma_regs can hold each warp's row operands in registers at this head dim: only the
// kernels sized for hd <= 64 have the room (flash_attention_mma.cu's with_variant); above it
// mma_regs runs the mma kernels.
constexpr bool mma_rows_in_registers_fit(int head_dim) {
    return head_dim <= 64;
}

// The kernels that run for storage t, head_dim and the variant asked for, as a benchmark names
// them: "cuda_cores", "mma", "mma_regs" or "wmma".
constexpr const char* flash_kernels_name(DType t, int head_dim, TensorCoreFlash asked) {
    if (!flash_attention_on_tensor_cores(t, head_dim)) return "cuda_cores";
    if (asked == TensorCoreFlash::wmma) return "wmma";
    if (asked == TensorCoreFlash::mma_regs && mma_rows_in_registers_fit(head_dim))
        return "mma_regs";
    return "mma";
}

} // namespace shardlab::cuda
