// The CUDA backend's Ops: cuBLAS for the GEMMs (fp32 accumulation), the kernels of
// model/kernels/cuda for the rest, every launch on the stream it is given. Scratch (attention's
// score matrices, the embedding backward's buckets, reduction partials) comes from the tracker as
// `workspace` and is released in stream order, like the CPU backend's GEMM workspace.
#pragma once

#include "core/memory_tracker.h"
#include "model/kernels/cuda/flash_attention_path.h"
#include "model/ops.h"

#include <memory>

namespace shardlab {

// How the linear layers' bias, GELU forward and weight gradients' bias gradients run: as cuBLASLt
// epilogues of their GEMMs (where cuBLASLt has an algorithm for the shape, else as below), or as
// separate kernels after cuBLAS GEMMs (bias_rows, gelu, column sums: the teaching path, and the
// fallback). The GELU backward and fc's bias gradient are one kernel of ours on both paths.
enum class LinearPath { cublaslt, separate };

// $SHARDLAB_CUDA_EPILOGUES: "cublaslt" (the default when unset) or "separate".
LinearPath linear_path_from_environment();

// $SHARDLAB_CUDA_FLASH: "auto", "mma", "wmma", "mma_regs" or "mma_wide" — which tensor-core
// kernels run flash attention in bf16 / fp16 (model/kernels/cuda/flash_attention_path.h); auto,
// each mma kernel's fastest form timed on the GPU (model/flash_tuner.h), is the default on a GPU,
// mma under the emulator.
cuda::TensorCoreFlash tensor_core_flash_from_environment();

// Defined only in builds with CUDA or its emulator (the CUDA backend is their one user).
std::unique_ptr<Ops>
make_cuda_ops(MemoryTracker& tracker, LinearPath path = linear_path_from_environment(),
              cuda::TensorCoreFlash flash = tensor_core_flash_from_environment());

} // namespace shardlab
