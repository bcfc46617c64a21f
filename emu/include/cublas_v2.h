// cuBLAS as the SIMT emulator provides it (test infrastructure: never in a real CUDA build). With
// emu/include first on the include path, `#include <cublas_v2.h>` lands here: the subset of the
// cuBLAS v2 API shardlab calls, with cuBLAS's names, enum values and signatures, so the backend's
// .cu sources compile unchanged. The GEMMs keep cuBLAS's column-major semantics and run in stream
// order on the handle's stream (emu/cublas.cpp); they compute in fp32 on the CPU (OpenBLAS).
#pragma once

#include <cuda_runtime.h>
#include <library_types.h>

#include <cstddef>

enum cublasStatus_t {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
};

// The library context: opaque to callers, as in cuBLAS.
struct cublasContext;
using cublasHandle_t = cublasContext*;

// How an operand is used: as stored, transposed, or conjugate-transposed (the same as transposed
// for real types).
enum cublasOperation_t {
    CUBLAS_OP_N = 0,
    CUBLAS_OP_T = 1,
    CUBLAS_OP_C = 2,
};

// The precision products are accumulated in. The emulator computes every 32F variant in full fp32
// (a GPU's FAST_TF32 rounds the inputs to TF32 first, so it is the GPU that is less exact).
enum cublasComputeType_t {
    CUBLAS_COMPUTE_16F = 64,
    CUBLAS_COMPUTE_16F_PEDANTIC = 65,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_PEDANTIC = 69,
    CUBLAS_COMPUTE_64F = 70,
    CUBLAS_COMPUTE_64F_PEDANTIC = 71,
    CUBLAS_COMPUTE_32I = 72,
    CUBLAS_COMPUTE_32I_PEDANTIC = 73,
    CUBLAS_COMPUTE_32F_FAST_16F = 74,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
};

// A GPU kernel choice: it never changes what a GEMM computes, so the emulator ignores it.
enum cublasGemmAlgo_t {
    CUBLAS_GEMM_DEFAULT = -1,
    CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99,
};

// The handle's math mode (a flag may be or-ed in). Recorded; no effect on the emulator's results.
enum cublasMath_t {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_PEDANTIC_MATH = 2,
    CUBLAS_TF32_TENSOR_OP_MATH = 3,
    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16,
};

// --- the handle
// -----------------------------------------------------------------------------------

// As in cuBLAS, the handle functions are the _v2 symbols under their plain names.
#define cublasCreate cublasCreate_v2
#define cublasDestroy cublasDestroy_v2
#define cublasSetStream cublasSetStream_v2
#define cublasGetStream cublasGetStream_v2
#define cublasSetWorkspace cublasSetWorkspace_v2
#define cublasSgemm cublasSgemm_v2

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle);
// Queued GEMMs keep nothing of the handle, so it may go while they still run.
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle);
// The stream the handle's later calls are ordered on (nullptr: the default stream).
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
// A user workspace (256-byte aligned, as cuBLAS requires); recorded, never needed on the CPU.
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                     std::size_t workspaceSizeInBytes);

const char* cublasGetStatusName(cublasStatus_t status);   // "CUBLAS_STATUS_..."
const char* cublasGetStatusString(cublasStatus_t status); // what it means

// --- GEMM: C = alpha * op(A) * op(B) + beta * C, column-major ------------------------------------
// op(A) is m x k, op(B) is k x n, C is m x n; lda/ldb/ldc are elements between columns as stored.
// alpha and beta are host pointers (read during the call) to values of the compute type; with
// beta == 0, C is only written. The calls check their arguments and return; the work runs in the
// handle's stream order, and a fault there (an operand not in device memory) is the device's
// sticky error, as a faulting kernel's would be.

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const float* alpha,
                              const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc);

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo);

// batchCount GEMMs; matrix i of each operand starts stride elements after matrix i - 1 (a stride of
// 0 reuses one matrix for every GEMM).
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo);
