// The small products of the CPU attention kernels (attention.cpp, flash_attention.cpp): fp32 (or,
// for the finite-difference checks, double) tiles, each product single-threaded on the thread that
// asks, inside the kernel's parallel region. Two libraries, as the backend's GEMMs (cpu_gemm.h):
// OpenBLAS's sgemm (gemm.h; the default, and what --reproducible keeps), or oneDNN's matmul with
// one primitive per tile shape, chosen where the backend runs its fp32 GEMMs on oneDNN (AVX-512):
// about 2x OpenBLAS's Haswell kernel on a 64 x 256 x 64 tile (docs/BENCHMARKS.md). double is
// always dgemm. Both sum in fp32 over exactly widened inputs; only the order of the sums differs.
// Where the backend's bf16 GEMMs run on oneDNN too (AVX512-BF16), bf16 tiles can be multiplied as
// they are, summed into fp32 (bf16_operands(): flash attention's bf16 path uses it).
#pragma once

#include "model/kernels/cpu/numeric.h"
#include "model/kernels/cpu/onednn_matmul.h"

namespace shardlab::cpu {

class TileGemm {
  public:
    TileGemm() = default; // OpenBLAS
    TileGemm(OneDnnMatmul& onednn, bool bf16_operands)
        : onednn_(&onednn), bf16_operands_(bf16_operands) {}

    // C = alpha op(A) op(B) + beta C on row-major tiles. state: the calling thread's own, for
    // oneDNN (its scratchpad, grown here when a shape needs more, and the arguments of the shapes
    // it ran: onednn_matmul.h; OpenBLAS needs none); a part of the kernel's per-thread scratch,
    // untracked as the rest of it (17 KiB of scratchpad for GPT-2's tiles).
    void operator()(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                    int lda, const float* B, int ldb, float beta, float* C, int ldc,
                    MatmulThreadState& state) const;
    void operator()(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const double* A,
                    int lda, const double* B, int ldb, float beta, double* C, int ldc,
                    MatmulThreadState& state) const;
    // bf16 A and B, fp32 C: only where bf16_operands().
    void operator()(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16_t* A,
                    int lda, const bf16_t* B, int ldb, float beta, float* C, int ldc,
                    MatmulThreadState& state) const;

    bool bf16_operands() const { return bf16_operands_; }
    const char* library() const { return onednn_ ? "oneDNN" : "OpenBLAS"; }

  private:
    OneDnnMatmul* onednn_ = nullptr; // shared with the backend's other GEMMs; its cache is locked
    bool bf16_operands_ = false;
};

} // namespace shardlab::cpu
