// Row-major GEMMs with a fused epilogue on cuBLASLt: the bias add, GELU and bias gradients done
// by the GEMM's own store instead of separate passes over its output. The operand swap of gemm.h
// (C^T = op(B)^T op(A)^T, column-major) maps row-major terms onto cuBLASLt's: a bias over C's
// columns is a bias over the column-major D's rows, and the column sums of the row-major B [K, N]
// are the k-sums of the column-major A — cuBLASLt's BGRADA. fp32 accumulation; the bias vector
// has C's type. Seen on an H200 (cuBLASLt 13.1): with a 16-bit C the BIAS epilogue rounds the
// product to C's type before adding the bias (two roundings), and an fp32 bias is refused
// (INVALID_VALUE). Included by .cu files only.
#pragma once

#include "core/dtype.h"
#include "model/kernels/cuda/gemm.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace shardlab::cuda {

enum class Epilogue {
    // C = alpha op(A) op(B) + bias (bias [N], C's type, added to every row).
    bias,
    // pre = alpha op(A) op(B) + bias, stored into aux [M, N] (row length aux_ld, C's type);
    // C = gelu(pre) (tanh form), from the fp32 pre.
    gelu_aux_bias,
    // C = alpha op(A) op(B) + beta C; bias [N] = the column sums over K of B [K, N] (trans_b false;
    // written, not added).
    bias_grad_of_b,
};

struct EpilogueArgs {
    Epilogue kind;
    void* bias;      // input (bias) or output (bias gradients)
    DType bias_type; // C's type (cuBLASLt's rule; the call checks it)
    void* aux = nullptr;
    int aux_ld = 0; // elements between aux's rows; a multiple of 8
};

// Device memory of `bytes` for the call, valid until s has passed it (the caller's caching
// allocator, stream-ordered).
using Workspace = std::function<void*(std::size_t bytes)>;

// The most workspace offered to cuBLASLt's heuristic: what cuBLAS itself takes on Hopper. The
// algorithm picked says how much of it it needs (often none), and only that is taken.
constexpr std::size_t kMaxEpilogueWorkspace = std::size_t(32) << 20;

// Enqueues C = epilogue(alpha op(A)[M, K] op(B)[K, N] + beta C) on s, all of type t, and returns
// true; or returns false, enqueuing nothing, when cuBLASLt has no algorithm for the combination
// (its heuristic says NOT_SUPPORTED) or the bias or aux is off the 16-byte grid: the caller then
// runs the separate kernels instead.
bool gemm_epilogue(const Cublas& blas, cudaStream_t s, DType t, bool trans_a, bool trans_b, int M,
                   int N, int K, float alpha, Operand a, Operand b, float beta, void* c, int ldc,
                   const EpilogueArgs& e, const Workspace& workspace);

} // namespace shardlab::cuda
