// GEMM through oneDNN's matmul primitive: C = alpha * op(A) * op(B) + beta * C (+ bias, unscaled)
// on row-major fp32 or bf16 matrices, fp32 accumulation, C rounded once on store (or kept fp32). A
// primitive is built once per shape (transposes, leading dimensions, alpha, beta, bias) and kept;
// the caller provides the scratchpad (scratchpad_bytes), so calls in flight on different streams
// or threads never share one, and the backend's GEMMs track every byte of theirs (the attention
// tiles' few KiB sit in the kernel's untracked per-thread scratch: tile_gemm.h). oneDNN runs on the
// calling thread's OpenMP team.
#pragma once

#include "core/dtype.h"

#include <cstddef>
#include <memory>
#include <string>

namespace shardlab::cpu {

struct MatmulShape {
    DType dtype = DType::f32; // A, B, C and bias: all fp32 or all bf16
    bool trans_a = false, trans_b = false;
    int M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
    float alpha = 1.0f, beta = 0.0f;
    bool bias = false;    // bias [N] added to every row of the product
    bool f32_out = false; // C fp32 whatever A and B are (bf16 tiles summed into fp32: tile_gemm.h)
};

// What one thread keeps for its many small products (the attention tiles: thousands a step): the
// scratchpad, and the arguments of the shapes it has run, oneDNN memory objects pointed at each
// call's matrices instead of built anew (building them cost ~1 us a call, as much as a 64 x 8 x 64
// product). Owned by the thread's buffers, used by that thread only.
class MatmulThreadState {
  public:
    MatmulThreadState();
    ~MatmulThreadState();
    MatmulThreadState(MatmulThreadState&&) noexcept;
    MatmulThreadState& operator=(MatmulThreadState&&) noexcept;

  private:
    friend class OneDnnMatmul;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class OneDnnMatmul {
  public:
    OneDnnMatmul();
    ~OneDnnMatmul();
    OneDnnMatmul(const OneDnnMatmul&) = delete;
    OneDnnMatmul& operator=(const OneDnnMatmul&) = delete;

    // Scratchpad the primitive for this shape needs (builds and keeps it on first use).
    std::size_t scratchpad_bytes(const MatmulShape& s);
    // Runs the product; scratchpad holds scratchpad_bytes(s) bytes, bias is null unless s.bias.
    void run(const MatmulShape& s, const void* A, const void* B, const void* bias, void* C,
             void* scratchpad);
    // The same without a bias, on the calling thread's state: its scratchpad, grown here to what
    // the shape needs, and the memory objects of the shapes it ran before (the tile products).
    void run(const MatmulShape& s, const void* A, const void* B, void* C, MatmulThreadState& state);
    // oneDNN's name for the implementation it picks for a square-ish product of this dtype,
    // e.g. "brg:avx512_core_bf16" or "gemm:jit"; "" when it has none on this CPU (bf16 without
    // AVX-512), and a name with "ref" when only its slow reference code would run.
    std::string implementation(DType dtype);
    // Whether oneDNN has a real kernel (not only its reference code) for this dtype on this CPU:
    // what the backend needs before it routes a GEMM here.
    bool has_kernel(DType dtype);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// oneDNN's version, e.g. "2.6.3".
std::string onednn_version();

} // namespace shardlab::cpu
