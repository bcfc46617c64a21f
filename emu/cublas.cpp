// cuBLAS for the SIMT emulator (test infrastructure: never in a real CUDA build): the calls of
// emu/include/cublas_v2.h with cuBLAS's column-major semantics and argument checks. A GEMM call
// checks its arguments and returns at once, as cuBLAS does; the product runs later in the handle's
// stream order (emu::enqueue), on the CPU: 16-bit operands widened to fp32, OpenBLAS's sgemm
// accumulating in fp32, alpha and beta applied in fp32, one rounding into C's type.
#include "core/dtype.h"
#include "core/sgemm_blocks.h"
#include "emu/include/cublas_v2.h"

#include <algorithm>
#include <cblas.h>
#include <cstdint>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// What a handle holds: the settings its later calls use. Queued work copies what it needs, so a
// handle may be destroyed while its GEMMs are still queued.
struct cublasContext {
    cudaStream_t stream = nullptr; // the default stream until cublasSetStream
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    void* workspace = nullptr;
    std::size_t workspace_bytes = 0;
};

namespace shardlab::emu {
namespace {

// --- arguments ----------------------------------------------------------------------------------

bool is_op(cublasOperation_t op) {
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

// Rows of an operand as stored, when op(X) is rows x cols (C is the conjugate of T: real types).
int stored_rows(cublasOperation_t op, int rows, int cols) {
    return op == CUBLAS_OP_N ? rows : cols;
}

// cuBLAS's CUBLAS_STATUS_INVALID_VALUE rules: known ops, no negative size, and each leading
// dimension at least the rows of its matrix as stored (and at least 1, even for empty matrices).
bool valid_arguments(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                     int lda, int ldb, int ldc, int batch) {
    if (!is_op(transa) || !is_op(transb)) return false;
    if (m < 0 || n < 0 || k < 0 || batch < 0) return false;
    return lda >= std::max(1, stored_rows(transa, m, k)) &&
           ldb >= std::max(1, stored_rows(transb, k, n)) && ldc >= std::max(1, m);
}

// The combinations cuBLAS computes with fp32 accumulation that the stand-in implements: fp32
// throughout, or bf16 / fp16 inputs (both the same) into C of the same type or fp32.
bool supported(cudaDataType_t a, cudaDataType_t b, cudaDataType_t c, cublasComputeType_t compute) {
    const bool fp32_compute = compute == CUBLAS_COMPUTE_32F ||
                              compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
                              compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    if (!fp32_compute || a != b) return false;
    if (a == CUDA_R_32F) return c == CUDA_R_32F;
    return (a == CUDA_R_16BF || a == CUDA_R_16F) && (c == a || c == CUDA_R_32F);
}

DType dtype_of(cudaDataType_t t) { // for the types supported() lets through
    return t == CUDA_R_16BF ? DType::bf16 : t == CUDA_R_16F ? DType::f16 : DType::f32;
}

// --- the queued work ----------------------------------------------------------------------------

// One operand as stored: matrices of rows x cols, column-major, ld elements between columns and
// stride elements from one matrix of the batch to the next.
struct Operand {
    const char* name; // "A", "B" or "C", for messages
    const void* data; // C's is written through: the caller passed it as void*
    DType type;
    int rows, cols, ld;
    long long stride;

    long long elem() const { return static_cast<long long>(dtype_size(type)); }
    const char* column(int matrix, int j) const {
        return static_cast<const char*>(data) + (matrix * stride + std::int64_t(j) * ld) * elem();
    }
};

// The operand whose op() is rows x cols.
Operand operand(const char* name, const void* data, cudaDataType_t t, cublasOperation_t op,
                int rows, int cols, int ld, long long stride) {
    const bool n = op == CUBLAS_OP_N;
    return {name, data, dtype_of(t), n ? rows : cols, n ? cols : rows, ld, stride};
}

// Everything a queued GEMM needs, copied when the call is made (alpha and beta included: cuBLAS
// reads host-pointer scalars during the call).
struct Gemm {
    bool trans_a, trans_b;
    int m, n, k, batch;
    float alpha, beta;
    Operand a, b, c;

    // Reference BLAS reads neither A nor B when nothing of their product reaches C.
    bool reads_ab() const { return k > 0 && alpha != 0.0f; }
};

// One matrix as fp32 for OpenBLAS: the stored one when it already is fp32, else a widened copy
// (exact: every bf16 and fp16 value is an fp32 value).
struct F32Matrix {
    const float* in_place = nullptr;
    std::vector<float> copy;
    int ld = 1;
    const float* data() const { return in_place ? in_place : copy.data(); }
};

F32Matrix as_f32(const Operand& o, int matrix) {
    F32Matrix f;
    if (o.type == DType::f32) {
        f.in_place = reinterpret_cast<const float*>(o.column(matrix, 0));
        f.ld = o.ld;
        return f;
    }
    f.copy.resize(std::size_t(o.rows) * std::size_t(o.cols));
    f.ld = std::max(1, o.rows);
    for (int j = 0; j < o.cols; ++j)
        convert(o.column(matrix, j), o.type, f.copy.data() + std::size_t(j) * o.rows, DType::f32,
                std::size_t(o.rows));
    return f;
}

// op(A) op(B) of one batch entry, m x n column-major, accumulated in fp32.
std::vector<float> product(const Gemm& g, int matrix) {
    std::vector<float> p(std::size_t(g.m) * std::size_t(g.n), 0.0f);
    if (!g.reads_ab()) return p;
    const F32Matrix a = as_f32(g.a, matrix), b = as_f32(g.b, matrix);
    // (by column blocks: a GPU's cuBLAS gives the same bits whatever the host's threads)
    sgemm_blocks(true, g.trans_a, g.trans_b, g.m, g.n, g.k, 1.0f, a.data(), a.ld, b.data(), b.ld,
                 0.0f, p.data(), g.m);
    return p;
}

// C = alpha * P + beta * C in fp32, rounded once into C's type. With beta == 0 C is not read, so
// whatever it held (NaN included) cannot reach the result, as in BLAS.
void write_c(const Gemm& g, int matrix, std::vector<float>& p) {
    std::vector<float> old(std::size_t(g.m));
    for (int j = 0; j < g.n; ++j) {
        float* pj = p.data() + std::size_t(j) * g.m;
        char* cj = const_cast<char*>(g.c.column(matrix, j));
        if (g.beta != 0.0f) {
            convert(cj, g.c.type, old.data(), DType::f32, old.size());
            for (int i = 0; i < g.m; ++i) pj[i] = g.alpha * pj[i] + g.beta * old[i];
        } else {
            for (int i = 0; i < g.m; ++i) pj[i] = g.alpha * pj[i];
        }
        convert(pj, DType::f32, cj, g.c.type, std::size_t(g.m));
    }
}

void run(const Gemm& g) {
    for (int matrix = 0; matrix < g.batch; ++matrix) {
        std::vector<float> p = product(g, matrix);
        write_c(g, matrix, p);
    }
}

// --- memory checks ------------------------------------------------------------------------------

// Memory a GPU kernel can reach: device memory, and pinned host memory (mapped into the device's
// address space under unified addressing). Pageable host memory it cannot.
bool reachable(std::uintptr_t address) {
    cudaPointerAttributes at;
    cudaPointerGetAttributes(&at, reinterpret_cast<const void*>(address));
    return at.type != cudaMemoryTypeUnregistered;
}

// Why a GPU would fault touching the operand's `batch` matrices (its first byte, and the lowest
// and highest elements it spans), or "" when it would not.
std::string fault_in(const Operand& o, int batch) {
    const long long span = (batch - 1) * o.stride; // negative strides are allowed
    const long long lowest = std::min(0LL, span);
    const long long highest = std::max(0LL, span) + (o.cols - 1LL) * o.ld + o.rows - 1;
    const auto base = reinterpret_cast<std::uintptr_t>(o.data);
    std::ostringstream why;
    why << "cuBLAS GEMM: " << o.name << " (" << o.data << ") ";
    if (!reachable(base))
        why << "is not device memory: a GPU kernel reading it faults (illegal address)";
    else if (!reachable(base + std::uintptr_t(lowest * o.elem())) ||
             !reachable(base + std::uintptr_t((highest + 1) * o.elem() - 1)))
        why << "runs past its allocation: elements " << lowest << " to " << highest << " (ld "
            << o.ld << ", stride " << o.stride << ") are not all device memory";
    else
        return "";
    return why.str();
}

std::string memory_fault(const Gemm& g) {
    std::string why = g.reads_ab() ? fault_in(g.a, g.batch) : "";
    if (why.empty() && g.reads_ab()) why = fault_in(g.b, g.batch);
    if (why.empty()) why = fault_in(g.c, g.batch);
    return why;
}

// Queues the GEMM on the stream. Memory a GPU could not reach is found now but reported as a real
// GPU reports it: asynchronously, as the device's sticky error when the stream gets there.
void submit(cudaStream_t s, const Gemm& g) {
    std::string fault = memory_fault(g);
    if (!fault.empty())
        enqueue(s, [fault] { throw std::runtime_error(fault); });
    else
        enqueue(s, [g] { run(g); });
}

} // namespace
} // namespace shardlab::emu

using namespace shardlab::emu;

// --- the handle
// -----------------------------------------------------------------------------------

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
    *handle = new (std::nothrow) cublasContext{};
    return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    handle->workspace = nullptr; // as in cuBLAS: a new stream goes back to the default workspace
    handle->workspace_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
    *stream = handle->stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    const int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_PEDANTIC_MATH &&
        base != CUBLAS_TF32_TENSOR_OP_MATH)
        return CUBLAS_STATUS_INVALID_VALUE;
    handle->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                     std::size_t workspaceSizeInBytes) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
    handle->workspace = workspace;
    handle->workspace_bytes = workspaceSizeInBytes;
    return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS:
        return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "the handle is not initialized (or no device)";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "a resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "an argument has an invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "the device lacks a feature the call needs";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "accessing GPU memory failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "the combination of types or options is not supported";
    }
    return "unknown cuBLAS status";
}

// --- GEMM ---------------------------------------------------------------------------------------

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
    const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t /*algo: a kernel choice, same result*/) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!valid_arguments(transa, transb, m, n, k, lda, ldb, ldc, batchCount) || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!supported(Atype, Btype, Ctype, computeType)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (m == 0 || n == 0 || batchCount == 0) return CUBLAS_STATUS_SUCCESS; // C is empty
    Gemm g{};
    g.trans_a = transa != CUBLAS_OP_N, g.trans_b = transb != CUBLAS_OP_N;
    g.m = m, g.n = n, g.k = k, g.batch = batchCount;
    g.alpha = *static_cast<const float*>(alpha); // fp32 compute: fp32 scalars, read now
    g.beta = *static_cast<const float*>(beta);
    g.a = operand("A", A, Atype, transa, m, k, lda, strideA);
    g.b = operand("B", B, Btype, transb, k, n, ldb, strideB);
    g.c = operand("C", C, Ctype, CUBLAS_OP_N, m, n, ldc, strideC);
    submit(handle->stream, g);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
    return cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B,
                                      Btype, ldb, 0, beta, C, Ctype, ldc, 0, 1, computeType, algo);
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const float* alpha,
                              const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
    return cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F,
                        ldb, beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
