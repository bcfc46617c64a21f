// Which flash attention implementation runs for a storage dtype and head dim: the tile products on
// tensor cores for bf16 and fp16 whose head dim is a multiple of 16 (the tensor cores' k), else on
// fp32 CUDA cores (flash_attention.h). On tensor cores, two implementations of one scheme: PTX
// mma.sync with the softmax in registers (flash_attention_mma.h) and WMMA with the scores through
// shared memory (flash_attention_wmma.h), chosen by $SHARDLAB_CUDA_FLASH so that a GPU run can time
// one against the other. Each of the mma kernels (forward, dK/dV, dQ) has three forms, the same
// bits in every one: plain; `regs`, each warp's row operands held in registers across the walk;
// `wide`, two 16-row blocks a warp (tiles of 128 rows: queries in the forward and dQ, keys in
// dK/dV), so that every operand of the walked tiles read from shared memory serves both. mma,
// mma_regs and mma_wide run every kernel in one form; auto (the default on a GPU) times each
// kernel's forms on its first call for a shape and keeps the fastest (model/flash_tuner.h). Free of
// CUDA headers, so the tests can hold each path to its own error bound.
#pragma once

#include "core/dtype.h"

namespace shardlab::cuda {

enum class TensorCoreFlash { mma, wmma, mma_regs, mma_wide, tuned };

// One mma kernel's form.
enum class MmaForm { plain, regs, wide };
constexpr MmaForm kMmaForms[] = {MmaForm::plain, MmaForm::regs, MmaForm::wide};

// The kernels one call runs: WMMA's, or the mma kernels each in its form.
struct FlashKernels {
    bool wmma = false;
    MmaForm forward = MmaForm::plain, kv = MmaForm::plain, q = MmaForm::plain;
};

// The kernels of a variant that names them all; for `tuned`, the plain forms: what runs where the
// tuner has no forms to choose from (flash_tuner.h).
constexpr FlashKernels kernels_of(TensorCoreFlash v) {
    const MmaForm f = v == TensorCoreFlash::mma_regs   ? MmaForm::regs
                      : v == TensorCoreFlash::mma_wide ? MmaForm::wide
                                                       : MmaForm::plain;
    return {v == TensorCoreFlash::wmma, f, f, f};
}

// A form as the variant that runs every kernel in it is named: "mma", "mma_regs", "mma_wide".
constexpr const char* mma_form_name(MmaForm f) {
    return f == MmaForm::regs ? "mma_regs" : f == MmaForm::wide ? "mma_wide" : "mma";
}

constexpr bool flash_attention_on_tensor_cores(DType t, int head_dim) {
    return (t == DType::bf16 || t == DType::f16) && head_dim > 0 && head_dim % 16 == 0;
}

// Whether the regs form's row operands, or the wide form's second row block, fit a thread's
// registers at this head dim: only in the kernels sized for hd <= 64 (flash_attention_mma.cu's
// with_form); above it every kernel runs plain.
constexpr bool mma_variants_fit(int head_dim) {
    return head_dim <= 64;
}

// Whether the mma kernels serve storage t and head_dim in more than one form (tensor cores, and
// the regs and wide forms fit): where mma_regs, mma_wide and auto choose anything.
constexpr bool has_mma_forms(DType t, int head_dim) {
    return flash_attention_on_tensor_cores(t, head_dim) && mma_variants_fit(head_dim);
}

// The kernels that run for storage t, head_dim and the variant asked for, as a benchmark names
// them: "cuda_cores", "mma", "mma_regs", "mma_wide", "wmma" or "auto" (whose forms the tuner
// names once it has timed them).
constexpr const char* flash_kernels_name(DType t, int head_dim, TensorCoreFlash asked) {
    if (!flash_attention_on_tensor_cores(t, head_dim)) return "cuda_cores";
    if (asked == TensorCoreFlash::wmma) return "wmma";
    if (!has_mma_forms(t, head_dim)) return "mma";
    if (asked == TensorCoreFlash::tuned) return "auto";
    return mma_form_name(kernels_of(asked).forward);
}

} // namespace shardlab::cuda
