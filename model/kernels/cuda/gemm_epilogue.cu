// Row-major GEMMs with a cuBLASLt epilogue (see gemm_epilogue.h for the operand swap). Each call
// builds its descriptors, asks the heuristic for one algorithm (offering up to
// kMaxEpilogueWorkspace), takes the workspace that algorithm needs and enqueues the matmul; the
// descriptors are freed by RAII whichever way the call ends.
#include "model/kernels/cuda/gemm_epilogue.h"

#include "core/error.h"

#include <cstdint>

namespace shardlab::cuda {

namespace {
cublasLtEpilogue_t lt_epilogue(Epilogue e) {
    switch (e) {
    case Epilogue::bias:
        return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::gelu_aux_bias:
        return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case Epilogue::bias_grad_of_b:
        return CUBLASLT_EPILOGUE_BGRADA; // B is the column-major A (the swap)
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

// The descriptors of one call, destroyed with it.
struct Descriptors {
    const CublasApi& api;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    explicit Descriptors(const CublasApi& api) : api(api) {}
    Descriptors(const Descriptors&) = delete;
    Descriptors& operator=(const Descriptors&) = delete;
    ~Descriptors() {
        if (pref) api.cublasLtMatmulPreferenceDestroy(pref);
        if (c) api.cublasLtMatrixLayoutDestroy(c);
        if (b) api.cublasLtMatrixLayoutDestroy(b);
        if (a) api.cublasLtMatrixLayoutDestroy(a);
        if (op) api.cublasLtMatmulDescDestroy(op);
    }
};

template <typename V>
void set_attribute(const Cublas& blas, cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                   const V& v) {
    blas.check(blas.api().cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(V)),
               "cublasLtMatmulDescSetAttribute");
}

// The column-major layout of a row-major operand: stored [rows, cols] is column-major cols x rows.
void layout(const Cublas& blas, cublasLtMatrixLayout_t* l, DType t, int rows, int cols, int ld) {
    blas.check(blas.api().cublasLtMatrixLayoutCreate(l, data_type(t), std::uint64_t(cols),
                                                     std::uint64_t(rows), ld),
               "cublasLtMatrixLayoutCreate");
}
// The largest power of two up to 256 that divides the address.
std::uint32_t alignment(const void* p) {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    std::uint32_t a = 1;
    while (a < 256 && address % (2 * a) == 0) a *= 2;
    return a;
}
} // namespace

bool gemm_epilogue(const Cublas& blas, cudaStream_t s, DType t, bool trans_a, bool trans_b, int M,
                   int N, int K, float alpha, Operand a, Operand b, float beta, void* c, int ldc,
                   const EpilogueArgs& e, const Workspace& workspace) {
    // The epilogue moves its vectors 16 bytes at a time, and a GPU faults on a bias or aux off that
    // grid (emu/cublaslt.cpp: misaligned); the heuristic's alignment preferences name A-D only.
    // A view into a unit whose offsets are not multiples of 16 bytes takes the separate kernels.
    if (alignment(e.bias) < 16 || (e.aux && alignment(e.aux) < 16)) return false;
    check(e.bias_type == t, "internal: a cuBLASLt epilogue's bias has C's type");
    const CublasApi& api = blas.api();
    Descriptors d(api);
    blas.check(api.cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
               "cublasLtMatmulDescCreate");
    // Column-major: D^T [N x M] = op(B)^T [N x K] op(A)^T [K x M].
    const std::int32_t ta = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const std::int32_t tb = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_attribute(blas, d.op, CUBLASLT_MATMUL_DESC_TRANSA, ta);
    set_attribute(blas, d.op, CUBLASLT_MATMUL_DESC_TRANSB, tb);
    set_attribute(blas, d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t(lt_epilogue(e.kind)));
    set_attribute(blas, d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, e.bias);
    set_attribute(blas, d.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                  std::int32_t(data_type(e.bias_type)));
    if (e.aux) {
        set_attribute(blas, d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, e.aux);
        set_attribute(blas, d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, std::int64_t(e.aux_ld));
    }
    // Row-major B is trans_b ? [N, K] : [K, N]; A is trans_a ? [K, M] : [M, K]; C is [M, N].
    layout(blas, &d.a, t, trans_b ? N : K, trans_b ? K : N, b.ld);
    layout(blas, &d.b, t, trans_a ? K : M, trans_a ? M : K, a.ld);
    layout(blas, &d.c, t, M, N, ldc);
    blas.check(api.cublasLtMatmulPreferenceCreate(&d.pref), "cublasLtMatmulPreferenceCreate");
    // Without workspace the heuristic leaves out the algorithms that need some (split-K among
    // them: a weight gradient's small M x N over K = B T rows fills few SMs without it).
    const std::uint64_t max_workspace = kMaxEpilogueWorkspace;
    blas.check(api.cublasLtMatmulPreferenceSetAttribute(d.pref,
                                                        CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &max_workspace, sizeof(max_workspace)),
               "cublasLtMatmulPreferenceSetAttribute");
    // The heuristic assumes 256-byte aligned matrices unless told: views into a parameter unit
    // may be less aligned, so say what each pointer is.
    const std::uint32_t align[] = {alignment(b.data), alignment(a.data), alignment(c),
                                   alignment(c)};
    const cublasLtMatmulPreferenceAttributes_t which[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; ++i)
        blas.check(
            api.cublasLtMatmulPreferenceSetAttribute(d.pref, which[i], &align[i], sizeof(align[i])),
            "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t algo{};
    int found = 0;
    const cublasStatus_t st = api.cublasLtMatmulAlgoGetHeuristic(blas.lt(), d.op, d.a, d.b, d.c,
                                                                 d.c, d.pref, 1, &algo, &found);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0))
        return false;
    blas.check(st, "cublasLtMatmulAlgoGetHeuristic");
    void* ws = algo.workspaceSize ? workspace(algo.workspaceSize) : nullptr;
    blas.check(api.cublasLtMatmul(blas.lt(), d.op, &alpha, b.data, d.a, a.data, d.b, &beta, c, d.c,
                                  c, d.c, &algo.algo, ws, algo.workspaceSize, s),
               "cublasLtMatmul");
    return true;
}

} // namespace shardlab::cuda
