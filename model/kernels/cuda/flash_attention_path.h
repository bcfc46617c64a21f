// Which flash attention implementation runs for a storage dtype and head dim: the tile products on
// tensor cores for bf16 and fp16 whose head dim is a multiple of 16 (the tensor cores' k), else on
// fp32 CUDA cores (flash_attention.h). On tensor cores, two implementations of one scheme: PTX
// mma.sync with the softmax in registers (flash_attention_mma.h, the default) and WMMA with the
// scores through shared memory (flash_attention_wmma.h), chosen by $SHARDLAB_CUDA_FLASH so that a
// GPU run can time one against the other. Two more forms of the mma kernels, the same bits as mma:
// mma_regs holds each warp's row operands in registers across the walk; mma_wide gives each warp
// two 16-row blocks (tiles of 128 rows: queries in the forward and dQ, keys in dK/dV), so that
// every operand of the walked tiles read from shared memory serves both. Free of CUDA headers, so
// the tests can hold each path to its own error bound.
#pragma once

#include "core/dtype.h"

namespace shardlab::cuda {

enum class TensorCoreFlash { mma, wmma, mma_regs, mma_wide };

constexpr bool flash_attention_on_tensor_cores(DType t, int head_dim) {
    return (t == DType::bf16 || t == DType::f16) && head_dim > 0 && head_dim % 16 == 0;
}

// Whether mma_regs's row operands, or mma_wide's second row block, fit a thread's registers at
// this head dim: only in the kernels sized for hd <= 64 (flash_attention_mma.cu's with_variant);
// above it both run the mma kernels.
constexpr bool mma_variants_fit(int head_dim) {
    return head_dim <= 64;
}

// The kernels that run for storage t, head_dim and the variant asked for, as a benchmark names
// them: "cuda_cores", "mma", "mma_regs", "mma_wide" or "wmma".
constexpr const char* flash_kernels_name(DType t, int head_dim, TensorCoreFlash asked) {
    if (!flash_attention_on_tensor_cores(t, head_dim)) return "cuda_cores";
    if (asked == TensorCoreFlash::wmma) return "wmma";
    if (asked == TensorCoreFlash::mma_regs && mma_variants_fit(head_dim)) return "mma_regs";
    if (asked == TensorCoreFlash::mma_wide && mma_variants_fit(head_dim)) return "mma_wide";
    return "mma";
}

} // namespace shardlab::cuda
