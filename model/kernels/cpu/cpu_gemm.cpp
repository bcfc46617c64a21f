// Path choice and dispatch for CpuGemm.
#include "model/kernels/cpu/cpu_gemm.h"

#include "core/error.h"
#include "model/kernels/cpu/blas_kernel.h"
#include "model/kernels/cpu/gemm.h"
#include "model/kernels/cpu/linear.h"

#include <cpuid.h>

namespace shardlab::cpu {

GemmLibrary GemmPaths::of(DType t) const {
    switch (t) {
    case DType::f32:
        return f32;
    case DType::bf16:
        return bf16;
    case DType::f16:
    case DType::i64:
        break;
    }
    return GemmLibrary::openblas;
}

namespace {
// CPUID leaf 7's AMX-BF16 bit (EDX 22), read directly: clang 14 has no "amx-bf16" for
// __builtin_cpu_supports.
bool has_amx_bf16() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 22 & 1u);
}
} // namespace

std::string cpu_isa() {
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl");
    const bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
    if (bf16 && has_amx_bf16()) return "avx512_core_amx"; // oneDNN's bf16 runs on AMX there
    if (bf16) return "avx512_core_bf16";
    if (avx512) return "avx512_core";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
    return "sse41";
}

GemmPaths choose_gemm_paths(const std::string& request, OneDnnMatmul& onednn) {
    if (request != "auto" && request != "openblas" && request != "onednn")
        throw UsageError("--gemm '" + request + "': choose auto, openblas or onednn");
    GemmPaths p;
    if (request == "openblas") return p;
    // "onednn": oneDNN for every dtype it has a kernel for on this CPU (bf16 needs AVX-512).
    if (request == "onednn") {
        if (onednn.has_kernel(DType::f32)) p.f32 = GemmLibrary::onednn;
        if (onednn.has_kernel(DType::bf16)) p.bf16 = GemmLibrary::onednn;
        return p;
    }
    // "auto", from measurements: on a Zen 5 with AVX-512 (issue 12's), oneDNN's fp32 matmul beat
    // OpenBLAS (410 against 390 GFLOP/s, 208 with the Haswell kernel OPENBLAS_CORETYPE sometimes
    // forces) and its AVX512-BF16 bf16 matmul doubled fp32, where OpenBLAS has to widen; on AVX2
    // (Zen 3, docs/BENCHMARKS.md) OpenBLAS's sgemm is level or ahead and oneDNN has no bf16 kernel.
    // With AMX (an Intel Xeon, 2026-11-29) oneDNN's bf16 runs its AMX kernels, 1.5-1.6 TFLOP/s.
    const std::string isa = cpu_isa();
    if (isa.rfind("avx512", 0) == 0 && onednn.has_kernel(DType::f32)) p.f32 = GemmLibrary::onednn;
    const bool bf16_isa = isa == "avx512_core_bf16" || isa == "avx512_core_amx";
    if (bf16_isa && onednn.has_kernel(DType::bf16)) p.bf16 = GemmLibrary::onednn;
    return p;
}

CpuGemm::CpuGemm(const std::string& request)
    : paths_(choose_gemm_paths(request.empty() ? default_gemm_request() : request, onednn_)) {}

std::size_t CpuGemm::workspace_bytes(const MatmulShape& s) {
    if (paths_.of(s.dtype) == GemmLibrary::onednn) return onednn_.scratchpad_bytes(s);
    switch (s.dtype) {
    case DType::f32:
        return 0;
    case DType::bf16:
        return gemm_workspace_floats<bf16_t>(s.M, s.N, s.K) * sizeof(float);
    case DType::f16:
        return gemm_workspace_floats<f16_t>(s.M, s.N, s.K) * sizeof(float);
    case DType::i64:
        break;
    }
    return 0;
}

namespace {
// OpenBLAS has no bias argument: rows start as the bias and the product is added onto them.
template <typename T>
void openblas_run(const MatmulShape& s, const T* A, const T* B, const T* bias, T* C, float* ws) {
    if (bias) bias_rows(C, bias, s.M, s.N); // (ldc == N whenever a bias is given)
    gemm<T>(s.trans_a, s.trans_b, s.M, s.N, s.K, s.alpha, A, s.lda, B, s.ldb, bias ? 1.0f : s.beta,
            C, s.ldc, ws);
}
} // namespace

void CpuGemm::run(const MatmulShape& s, const void* A, const void* B, const void* bias, void* C,
                  void* workspace) {
    check(!s.bias || (s.beta == 0.0f && s.ldc == s.N), "internal: gemm bias needs beta 0, ldc N");
    if (paths_.of(s.dtype) == GemmLibrary::onednn)
        return onednn_.run(s, A, B, s.bias ? bias : nullptr, C, workspace);
    float* ws = static_cast<float*>(workspace);
    const void* b = s.bias ? bias : nullptr;
    switch (s.dtype) {
    case DType::f32:
        return openblas_run(s, static_cast<const float*>(A), static_cast<const float*>(B),
                            static_cast<const float*>(b), static_cast<float*>(C), ws);
    case DType::bf16:
        return openblas_run(s, static_cast<const bf16_t*>(A), static_cast<const bf16_t*>(B),
                            static_cast<const bf16_t*>(b), static_cast<bf16_t*>(C), ws);
    case DType::f16:
        return openblas_run(s, static_cast<const f16_t*>(A), static_cast<const f16_t*>(B),
                            static_cast<const f16_t*>(b), static_cast<f16_t*>(C), ws);
    case DType::i64:
        throw Error("internal: int64 is not a GEMM type");
    }
}

std::string CpuGemm::describe() {
    std::string out;
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
        std::string line = std::string(dtype_name(t)) + ": ";
        if (paths_.of(t) == GemmLibrary::onednn)
            line += "oneDNN " + onednn_version() + " matmul, " + onednn_.implementation(t);
        else if (t == DType::f32)
            line += "OpenBLAS sgemm, kernel " + openblas_kernel();
        else if (t == DType::bf16 && native_bf16_gemm_available())
            line += "OpenBLAS sbgemm, kernel " + openblas_kernel();
        else
            line += "widened to fp32, OpenBLAS sgemm, kernel " + openblas_kernel();
        out += line + "\n";
    }
    return out;
}

} // namespace shardlab::cpu
