// cuBLAS and cuBLASLt as a table of the functions the kernels call, opened when a CUDA backend is
// made rather than linked into the binary: loading them costs 0.4-0.9 s and ~200 MB a process,
// which a CPU-only process (a CPU rank, `plan`, a test) never needs. The emulator build fills the
// table with its own functions. Included by the CUDA sources and their tests.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <string>

// Each function once, X(name); cublas_v2.h's macros give the exported names (cublasCreate is
// cublasCreate_v2), so a member, a call and the symbol looked up all agree.
// clang-format off
#define SHARDLAB_CUBLAS_FUNCTIONS(X) \
    X(cublasCreate) X(cublasDestroy) X(cublasSetStream) \
    X(cublasGetStatusName) X(cublasGetStatusString)
#define SHARDLAB_CUBLASLT_FUNCTIONS(X) \
    X(cublasLtCreate) X(cublasLtDestroy) \
    X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) \
    X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) \
    X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) \
    X(cublasLtMatmulPreferenceSetAttribute) \
    X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
// clang-format on

namespace shardlab::cuda {

// A pointer for each function, named as the function: api.cublasLtMatmul(...).
struct CublasApi {
#define SHARDLAB_CUBLAS_MEMBER(fn) decltype(&::fn) fn = nullptr;
    SHARDLAB_CUBLAS_FUNCTIONS(SHARDLAB_CUBLAS_MEMBER)
    SHARDLAB_CUBLASLT_FUNCTIONS(SHARDLAB_CUBLAS_MEMBER)
#undef SHARDLAB_CUBLAS_MEMBER
    // Overloaded in C++ (a form kept for old code takes a cudaDataType compute type), so not in
    // the lists: its type is spelled out, the exported function's.
    cublasStatus_t (*cublasGemmStridedBatchedEx)(
        cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
        const void* alpha, const void* A, cudaDataType, int lda, long long stride_a, const void* B,
        cudaDataType, int ldb, long long stride_b, const void* beta, void* C, cudaDataType, int ldc,
        long long stride_c, int batch, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;

    std::string files; // where they came from, for `shardlab device`
};

// Opens libcublas and libcublasLt (the major version the build compiled against) and finds every
// function; throws Error naming the library that did not load and how to make it found.
CublasApi load_cublas();

// One backend's cuBLAS: the functions, a cuBLAS handle, and a cuBLASLt handle when asked for.
class Cublas {
  public:
    explicit Cublas(bool with_lt);
    ~Cublas();
    Cublas(const Cublas&) = delete;
    Cublas& operator=(const Cublas&) = delete;

    const CublasApi& api() const { return api_; }
    cublasHandle_t handle() const { return blas_; }
    cublasLtHandle_t lt() const { return lt_; } // null unless asked for

    // Throws Error naming the call and cuBLAS's words for the status, unless it is success.
    void check(cublasStatus_t status, const char* what) const;

  private:
    CublasApi api_;
    cublasHandle_t blas_ = nullptr;
    cublasLtHandle_t lt_ = nullptr;
};

} // namespace shardlab::cuda
