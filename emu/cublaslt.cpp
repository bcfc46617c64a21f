// cuBLASLt for the SIMT emulator (test infrastructure: never in a real CUDA build): the calls of
// emu/include/cublasLt.h. cublasLtMatmul checks its arguments and returns at once; the product runs
// later in the stream's order (emu::enqueue), on the CPU, computed as cuBLASLt computes it:
// operands widened to fp32, OpenBLAS's sgemm accumulating in fp32, then per element in fp32
//   z = alpha * p + beta * c (+ bias[row])  — the bias added before the output is rounded,
// and the epilogue on z before the one rounding into D: GELU (GPT-2's tanh form) with z stored
// into aux (rounded to the output type) for backward; or, from aux, z * gelu'(aux) with its row
// sums as the bias gradient. BGRADA / BGRADB sum op(A)'s rows / op(B)'s columns over k. Every sum
// of a bias gradient is fp32 in ascending index order (a GPU reduces in its own tree order).
// As cuBLASLt 13.1 did on an H200 (docs/BENCHMARKS.md, 2026-11-28): BIAS into a 16-bit D
// rounds alpha p + beta c to D's type before adding the bias; an fp32 bias beside a 16-bit D is
// INVALID_VALUE; BGRADA with both operands transposed has no algorithm.
#include "emu/include/cublasLt.h"
#include "core/dtype.h"
#include "core/sgemm_blocks.h"

#include <algorithm>
#include <cblas.h>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

struct cublasLtContext {};

struct cublasLtMatmulDescOpaque_t {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    std::int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    std::int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
    std::uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    void* bias = nullptr;
    void* aux = nullptr;
    std::int64_t aux_ld = 0;
    std::int32_t aux_type = -1, bias_type = -1; // -1: D's type, cuBLASLt's default
};

struct cublasLtMatrixLayoutOpaque_t {
    cudaDataType type;
    std::uint64_t rows, cols;
    std::int64_t ld;
};

struct cublasLtMatmulPreferenceOpaque_t {
    std::uint64_t max_workspace = 0;
    std::uint32_t min_alignment[4] = {256, 256, 256, 256}; // A, B, C, D
};

namespace shardlab::emu {
namespace {

// The workspace the emulator's algorithm asks for, when the caller offers that much or more.
constexpr std::uint64_t kAlgoWorkspace = std::uint64_t(1) << 20;

// --- what the stand-in runs ---------------------------------------------------------------------

bool storage_type(cudaDataType t) {
    return t == CUDA_R_32F || t == CUDA_R_16BF || t == CUDA_R_16F;
}

DType dtype_of(int t) {
    return t == CUDA_R_16BF ? DType::bf16 : t == CUDA_R_16F ? DType::f16 : DType::f32;
}

bool has_bias_input(std::uint32_t e) {
    return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
bool has_bias_output(std::uint32_t e) {
    return e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADA ||
           e == CUBLASLT_EPILOGUE_BGRADB;
}
bool has_aux(std::uint32_t e) {
    return e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}

// Why the stand-in does not run this combination, or "" when it does.
std::string unsupported(const cublasLtMatmulDescOpaque_t& d, const cublasLtMatrixLayoutOpaque_t& a,
                        const cublasLtMatrixLayoutOpaque_t& b,
                        const cublasLtMatrixLayoutOpaque_t& c,
                        const cublasLtMatrixLayoutOpaque_t& out) {
    const bool f32_compute = d.compute == CUBLAS_COMPUTE_32F ||
                             d.compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
                             d.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    if (!f32_compute || d.scale != CUDA_R_32F)
        return "only fp32 compute (CUBLAS_COMPUTE_32F*) with fp32 scale is emulated";
    if (d.pointer_mode != CUBLASLT_POINTER_MODE_HOST) return "only host-pointer alpha and beta";
    if (a.type != b.type || !storage_type(a.type))
        return "A and B must be one of fp32, bf16, fp16, the same";
    if (c.type != out.type) return "C and D must have the same type";
    if (out.type != a.type && !(out.type == CUDA_R_32F && a.type != CUDA_R_32F))
        return "D must have A's type (or fp32 for 16-bit A)";
    const std::uint32_t e = d.epilogue;
    if (e != CUBLASLT_EPILOGUE_DEFAULT && !has_bias_input(e) && !has_bias_output(e))
        return "epilogue " + std::to_string(e) + " is not emulated";
    if ((has_bias_input(e) || has_bias_output(e)) &&
        !(d.bias_type == -1 || d.bias_type == out.type || d.bias_type == CUDA_R_32F))
        return "the bias type must be D's type";
    if (e == CUBLASLT_EPILOGUE_BGRADA && d.transa != CUBLAS_OP_N && d.transb != CUBLAS_OP_N)
        return "BGRADA with both operands transposed";
    if (has_aux(e)) {
        if (d.aux_type != -1 && d.aux_type != out.type) return "the aux type must be D's type";
        if (d.aux_ld % 8 != 0 || d.aux_ld < std::int64_t(out.rows))
            return "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD must be divisible by 8 and at least D's "
                   "rows";
    }
    return "";
}

// cuBLASLt's CUBLAS_STATUS_INVALID_VALUE: shapes that do not chain, a leading dimension shorter
// than its matrix's rows, a pointer the epilogue needs not set, or an fp32 bias beside a 16-bit D.
bool invalid(const cublasLtMatmulDescOpaque_t& d, const cublasLtMatrixLayoutOpaque_t& a,
             const cublasLtMatrixLayoutOpaque_t& b, const cublasLtMatrixLayoutOpaque_t& c,
             const cublasLtMatrixLayoutOpaque_t& out) {
    const bool ta = d.transa != CUBLAS_OP_N, tb = d.transb != CUBLAS_OP_N;
    const std::uint64_t m = out.rows, n = out.cols, k = ta ? a.rows : a.cols;
    if ((ta ? a.cols : a.rows) != m || (tb ? b.rows : b.cols) != n || (tb ? b.cols : b.rows) != k)
        return true;
    if (c.rows != m || c.cols != n) return true;
    for (const auto* l : {&a, &b, &c, &out})
        if (l->ld < std::max<std::int64_t>(1, std::int64_t(l->rows))) return true;
    const std::uint32_t e = d.epilogue;
    if ((has_bias_input(e) || has_bias_output(e)) &&
        (!d.bias || (d.bias_type == CUDA_R_32F && out.type != CUDA_R_32F)))
        return true;
    return has_aux(e) && !d.aux;
}

void log_rejection(const std::string& why) {
    const char* level = std::getenv("CUBLASLT_LOG_LEVEL");
    if (level && std::atoi(level) >= 1)
        std::cerr << "[cublasLt emulator] not supported: " << why << "\n";
}

// --- the queued work ----------------------------------------------------------------------------

// One column-major matrix as stored.
struct Matrix {
    const char* name;
    const void* data;
    DType type;
    int rows, cols;
    std::int64_t ld;

    std::size_t elem() const { return dtype_size(type); }
    char* at(int i, int j) const {
        return const_cast<char*>(static_cast<const char*>(data)) +
               (std::int64_t(j) * ld + i) * std::int64_t(elem());
    }
    float get(int i, int j) const { return load_as_f32(at(i, j), type, 0); }
    void set(int i, int j, float v) const { convert(&v, DType::f32, at(i, j), type, 1); }
    // The matrix as fp32, packed (ld = rows): exact, every bf16 / fp16 value is an fp32 value.
    std::vector<float> widened() const {
        std::vector<float> f(std::size_t(rows) * std::size_t(cols));
        for (int j = 0; j < cols; ++j)
            convert(at(0, j), type, f.data() + std::size_t(j) * rows, DType::f32,
                    std::size_t(rows));
        return f;
    }
};

struct Matmul {
    bool ta, tb;
    int m, n, k;
    float alpha, beta;
    std::uint32_t epilogue;
    Matrix a, b, c, d, aux; // aux: m x n at aux_ld, when the epilogue has one
    void* bias;
    DType bias_type;
    void* workspace;               // what the caller handed over for the algorithm
    std::uint64_t workspace_bytes; // what the algorithm asked for (0: none)
};

float gelu(float x) { // GPT-2's tanh form, as model/kernels/cuda/gelu.cu
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

float gelu_grad(float x, float dy) { // its derivative written out, as gelu.cu
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    const float t = std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x));
    const float sech2 = 1.0f - t * t;
    const float grad =
        0.5f * (1.0f + t) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + float(3 * 0.044715) * x * x);
    return grad * dy;
}

// z rounded to a 16-bit type and widened back.
float rounded(float z, DType t) {
    std::uint16_t h = 0;
    convert(&z, DType::f32, &h, t, 1);
    convert(&h, t, &z, DType::f32, 1);
    return z;
}

// op(A) op(B), m x n column-major, accumulated in fp32.
std::vector<float> product(const Matmul& g) {
    std::vector<float> p(std::size_t(g.m) * std::size_t(g.n), 0.0f);
    if (g.k == 0) return p;
    const std::vector<float> a = g.a.widened(), b = g.b.widened();
    // (by column blocks: a GPU's cuBLASLt gives the same bits whatever the host's threads)
    sgemm_blocks(true, g.ta, g.tb, g.m, g.n, g.k, 1.0f, a.data(), std::max(1, g.a.rows), b.data(),
                 std::max(1, g.b.rows), 0.0f, p.data(), g.m);
    return p;
}

// BGRADA: sums over k of op(A)'s rows (m of them); BGRADB: of op(B)'s columns (n).
std::vector<float> operand_sums(const Matmul& g) {
    const bool of_a = g.epilogue == CUBLASLT_EPILOGUE_BGRADA;
    const Matrix& x = of_a ? g.a : g.b;
    const bool trans = of_a ? g.ta : g.tb;
    std::vector<float> s(std::size_t(of_a ? g.m : g.n), 0.0f);
    for (std::size_t v = 0; v < s.size(); ++v)
        for (int kk = 0; kk < g.k; ++kk) // op(A)[v, kk] or op(B)[kk, v]
            s[v] += of_a ? (trans ? x.get(kk, int(v)) : x.get(int(v), kk))
                         : (trans ? x.get(int(v), kk) : x.get(kk, int(v)));
    return s;
}

void run(const Matmul& g) {
    const std::vector<float> p = product(g);
    std::vector<float> bias(std::size_t(g.m), 0.0f);
    if (has_bias_input(g.epilogue))
        convert(g.bias, g.bias_type, bias.data(), DType::f32, bias.size());
    std::vector<float> bias_grad;
    if (g.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD) bias_grad.assign(std::size_t(g.m), 0.0f);
    for (int j = 0; j < g.n; ++j)
        for (int i = 0; i < g.m; ++i) {
            float z = g.alpha * p[std::size_t(j) * g.m + i];
            if (g.beta != 0.0f) z = z + g.beta * g.c.get(i, j); // beta == 0: C is not read
            if (g.epilogue == CUBLASLT_EPILOGUE_BIAS && g.d.type != DType::f32)
                z = rounded(z, g.d.type);
            if (has_bias_input(g.epilogue)) z = z + bias[i];
            if (g.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
                g.aux.set(i, j, z);
                z = gelu(z);
            } else if (g.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
                z = gelu_grad(g.aux.get(i, j), z);
                bias_grad[i] += z;
            }
            g.d.set(i, j, z);
        }
    if (g.epilogue == CUBLASLT_EPILOGUE_BGRADA || g.epilogue == CUBLASLT_EPILOGUE_BGRADB)
        bias_grad = operand_sums(g);
    if (!bias_grad.empty())
        convert(bias_grad.data(), DType::f32, g.bias, g.bias_type, bias_grad.size());
}

// --- memory checks ------------------------------------------------------------------------------

bool reachable(const void* p) {
    cudaPointerAttributes at;
    cudaPointerGetAttributes(&at, p);
    return at.type != cudaMemoryTypeUnregistered;
}

// Why a GPU would fault touching the matrix (its first and last element), or "".
std::string fault_in(const Matrix& x) {
    if (x.rows == 0 || x.cols == 0) return "";
    std::ostringstream why;
    why << "cuBLASLt matmul: " << x.name << " (" << x.data << ") ";
    if (!reachable(x.data))
        why << "is not device memory: a GPU kernel reading it faults (illegal address)";
    else if (!reachable(x.at(x.rows - 1, x.cols - 1) + x.elem() - 1))
        why << "runs past its allocation (" << x.rows << " x " << x.cols << ", ld " << x.ld << ")";
    else
        return "";
    return why.str();
}

// The epilogue's vectors are read and written 16 bytes at a time: a bias or aux pointer off that
// grid is a misaligned-address fault on a GPU (seen on A100s; cuBLASLt's heuristic does not check
// it), so shardlab falls back to separate kernels instead (model/kernels/cuda/gemm_epilogue.cu).
std::string misaligned(const Matrix& x) {
    if (reinterpret_cast<std::uintptr_t>(x.data) % 16 == 0) return "";
    std::ostringstream why;
    why << "cuBLASLt matmul: the epilogue's " << x.name << " (" << x.data
        << ") is not 16-byte aligned: a GPU faults (misaligned address)";
    return why.str();
}

std::string memory_fault(const Matmul& g) {
    std::vector<Matrix> touched = {g.a, g.b, g.d}, vectors;
    if (g.beta != 0.0f) touched.push_back(g.c);
    if (has_aux(g.epilogue)) vectors.push_back(g.aux);
    const int bias_len = g.epilogue == CUBLASLT_EPILOGUE_BGRADB ? g.n : g.m;
    if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT)
        vectors.push_back({"bias", g.bias, g.bias_type, bias_len, 1, bias_len});
    for (const Matrix& x : vectors) {
        if (std::string why = misaligned(x); !why.empty()) return why;
        touched.push_back(x);
    }
    for (const Matrix& x : touched)
        if (std::string why = fault_in(x); !why.empty()) return why;
    const char* ws = static_cast<const char*>(g.workspace);
    if (g.workspace_bytes && (!reachable(ws) || !reachable(ws + g.workspace_bytes - 1))) {
        std::ostringstream why;
        why << "cuBLASLt matmul: its workspace (" << g.workspace << ", " << g.workspace_bytes
            << " bytes the algorithm asked for) is not device memory that long";
        return why.str();
    }
    return "";
}

Matrix matrix(const char* name, const void* data, const cublasLtMatrixLayoutOpaque_t& l) {
    return {name, data, dtype_of(l.type), int(l.rows), int(l.cols), l.ld};
}

} // namespace
} // namespace shardlab::emu

using namespace shardlab::emu;

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
    *handle = new (std::nothrow) cublasLtContext{};
    return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

const char* cublasLtGetStatusName(cublasStatus_t status) {
    return cublasGetStatusName(status);
}
const char* cublasLtGetStatusString(cublasStatus_t status) {
    return cublasGetStatusString(status);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
    if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
    *desc = new (std::nothrow) cublasLtMatmulDescOpaque_t{computeType, scaleType};
    return *desc ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    delete desc;
    return CUBLAS_STATUS_SUCCESS;
}

namespace {
// Copies the attribute's value when buf holds exactly a T.
template <typename T>
cublasStatus_t set(T& field, const void* buf, std::size_t size) {
    if (!buf || size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&field, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}
} // namespace

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              std::size_t size) {
    if (!d) return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
        return set(d->compute, buf, size);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
        return set(d->scale, buf, size);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
        return set(d->pointer_mode, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSA:
        return set(d->transa, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB:
        return set(d->transb, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        return set(d->epilogue, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        return set(d->bias, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
        return set(d->aux, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
        return set(d->aux_ld, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
        return set(d->aux_type, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        return set(d->bias_type, buf, size);
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
    if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
    if (!storage_type(type) || rows > std::uint64_t(INT32_MAX) || cols > std::uint64_t(INT32_MAX))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    *layout = new (std::nothrow) cublasLtMatrixLayoutOpaque_t{type, rows, cols, ld};
    return *layout ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    delete layout;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
    if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
    *pref = new (std::nothrow) cublasLtMatmulPreferenceOpaque_t{};
    return *pref ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    delete pref;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, std::size_t size) {
    if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        return set(pref->max_workspace, buf, size);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        return set(pref->min_alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf,
                   size);
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: {
        std::uint32_t mode = 0; // only BEST_FIT (0)
        const cublasStatus_t s = set(mode, buf, size);
        return s != CUBLAS_STATUS_SUCCESS ? s : mode == 0 ? s : CUBLAS_STATUS_NOT_SUPPORTED;
    }
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t
cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                               cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                               cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                               cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                               cublasLtMatmulHeuristicResult_t results[], int* returnAlgoCount) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!desc || !Adesc || !Bdesc || !Cdesc || !Ddesc || !preference || requestedAlgoCount < 1 ||
        !results || !returnAlgoCount)
        return CUBLAS_STATUS_INVALID_VALUE;
    *returnAlgoCount = 0;
    if (const std::string why = unsupported(*desc, *Adesc, *Bdesc, *Cdesc, *Ddesc); !why.empty()) {
        log_rejection(why);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (invalid(*desc, *Adesc, *Bdesc, *Cdesc, *Ddesc)) return CUBLAS_STATUS_INVALID_VALUE;
    results[0] = {};
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    // Its one algorithm asks for workspace when offered some, as a GPU's split-K ones do, so that
    // callers hand one over (the algorithm keeps the size: cublasLtMatmul checks it).
    results[0].workspaceSize = std::min<std::uint64_t>(preference->max_workspace, kAlgoWorkspace);
    results[0].algo.data[0] = results[0].workspaceSize;
    *returnAlgoCount = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              std::size_t workspaceSizeInBytes, cudaStream_t stream) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!desc || !Adesc || !Bdesc || !Cdesc || !Ddesc || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (const std::string why = unsupported(*desc, *Adesc, *Bdesc, *Cdesc, *Ddesc); !why.empty()) {
        log_rejection(why);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (invalid(*desc, *Adesc, *Bdesc, *Cdesc, *Ddesc)) return CUBLAS_STATUS_INVALID_VALUE;
    // The heuristic's algorithm needs the workspace it asked for (every algorithm computes the
    // same result here; only that need differs).
    const std::uint64_t need = algo ? algo->data[0] : 0;
    if (workspaceSizeInBytes < need || (need && !workspace)) return CUBLAS_STATUS_INVALID_VALUE;
    Matmul g{};
    g.ta = desc->transa != CUBLAS_OP_N, g.tb = desc->transb != CUBLAS_OP_N;
    g.m = int(Ddesc->rows), g.n = int(Ddesc->cols), g.k = int(g.ta ? Adesc->rows : Adesc->cols);
    g.alpha = *static_cast<const float*>(alpha); // host pointers, read now as cuBLASLt does
    g.beta = *static_cast<const float*>(beta);
    g.epilogue = desc->epilogue;
    g.a = matrix("A", A, *Adesc), g.b = matrix("B", B, *Bdesc);
    g.c = matrix("C", C, *Cdesc), g.d = matrix("D", D, *Ddesc);
    g.aux = {"aux", desc->aux, dtype_of(Ddesc->type), g.m, g.n, desc->aux_ld};
    g.workspace = workspace, g.workspace_bytes = need;
    g.bias = desc->bias;
    g.bias_type = dtype_of(desc->bias_type == -1 ? int(Ddesc->type) : desc->bias_type);
    if (g.m == 0 || g.n == 0) return CUBLAS_STATUS_SUCCESS;
    // Memory a GPU could not reach is reported as a GPU reports it: as the device's sticky error
    // when the stream gets there.
    if (std::string fault = memory_fault(g); !fault.empty())
        enqueue(stream, [fault] { throw std::runtime_error(fault); });
    else
        enqueue(stream, [g] { run(g); });
    return CUBLAS_STATUS_SUCCESS;
}
