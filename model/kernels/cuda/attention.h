// Causal attention on cuBLAS and the softmax kernels (attention.cu). Included by .cu files only.
#pragma once

#include "core/dtype.h"

#include "core/cuda/cublas_library.h"

#include <cuda_runtime.h>

namespace shardlab::cuda {

// Causal attention over qkv [B, T, 3C] (H heads), batch by batch: scores
// Q K^T / sqrt(hd) into fp32 `scores` [H, T, T] by cuBLAS, the causal softmax into att
// [B, H, T, T] (dtype t, kept for backward), out [B, T, C] = att V by cuBLAS. Backward overwrites
// dqkv; dprob [H, T, T] fp32 and dscore [H, T, T] (dtype t) are its scratch.
void attention_forward(const Cublas& blas, cudaStream_t s, void* out, void* att, const void* qkv,
                       int B, int T, int C, int H, DType t, float* scores);
void attention_backward(const Cublas& blas, cudaStream_t s, void* dqkv, const void* dout,
                        const void* qkv, const void* att, int B, int T, int C, int H, DType t,
                        float* dprob, void* dscore);

} // namespace shardlab::cuda
