// The CPU backend's one GEMM entry point: picks, per dtype, oneDNN's matmul or OpenBLAS (the
// portable twin, model/kernels/cpu/gemm.h) and runs the product there. The choice is made once,
// from the CPU's instruction set (never from a timing, so the same run gives the same bits), and
// can be forced with --gemm / SHARDLAB_GEMM so tests hold the two paths against each other.
#pragma once

#include "model/kernels/cpu/onednn_matmul.h"
#include "model/kernels/cpu/tile_gemm.h"

#include <cstddef>
#include <cstdlib>
#include <string>

namespace shardlab::cpu {

enum class GemmLibrary { openblas, onednn };

struct GemmPaths {
    GemmLibrary f32 = GemmLibrary::openblas, bf16 = GemmLibrary::openblas;
    // fp16 always widens to fp32 for OpenBLAS: oneDNN's fp16 matmul needs AVX512-FP16.
    GemmLibrary of(DType t) const;
};

// The request when none is given: $SHARDLAB_GEMM if set, else "auto". (Inline: the flag checks use
// it without linking the GEMM libraries.)
inline std::string default_gemm_request() {
    const char* v = std::getenv("SHARDLAB_GEMM");
    return v && *v ? v : "auto";
}

// "auto" (by CPU), "openblas" or "onednn"; anything else throws UsageError naming the choices.
GemmPaths choose_gemm_paths(const std::string& request, OneDnnMatmul& onednn);

// The best vector ISA of this CPU as oneDNN names them: "avx512_core_amx", "avx512_core_bf16",
// "avx512_core", "avx2", "sse41".
std::string cpu_isa();

class CpuGemm {
  public:
    explicit CpuGemm(const std::string& request); // "" = default_gemm_request()

    // Bytes of workspace run() needs for this shape: the widened operands on the OpenBLAS path
    // for 16-bit dtypes, oneDNN's scratchpad on its path.
    std::size_t workspace_bytes(const MatmulShape& s);
    // C = alpha * op(A) op(B) (+ bias) + beta * C; 16-bit C is rounded once.
    void run(const MatmulShape& s, const void* A, const void* B, const void* bias, void* C,
             void* workspace);

    const GemmPaths& paths() const { return paths_; }
    // The attention kernels' tile products, on this backend's fp32 library (tile_gemm.h).
    // bf16 tiles are multiplied as they are where bf16 GEMMs run on oneDNN too.
    TileGemm tiles() {
        if (paths_.f32 != GemmLibrary::onednn) return TileGemm();
        return TileGemm(onednn_, paths_.bf16 == GemmLibrary::onednn);
    }
    // One line per dtype: library, kernel and ISA, e.g. "fp32: oneDNN 2.6.3 brg:avx2 (avx2)".
    std::string describe();

  private:
    OneDnnMatmul onednn_;
    GemmPaths paths_;
};

} // namespace shardlab::cpu
