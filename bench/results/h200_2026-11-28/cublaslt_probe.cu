// One-off probe of the second H200 lease (2026-11-28; not part of the build; its output is
// cublaslt_probe.txt beside it): which cuBLASLt epilogue descriptors the real library accepts, as
// gemm_epilogue.cu built them at f4dfbae, and how the BIAS epilogue rounds in bf16. Status 7 is
// CUBLAS_STATUS_INVALID_VALUE, 15 NOT_SUPPORTED. The last rounding line's bias type 0 (fp32) got
// no algorithm: its counts are those of the matmul before it, left in D.
// Built here: nvcc -O2 -arch=sm_90 -o lt_probe cublaslt_probe.cu -lcublasLt (nvcc 13.0), run
// there with LD_LIBRARY_PATH=/usr/local/cuda/lib64.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <random>
#include <vector>

static const char* en(cublasLtEpilogue_t e) {
    switch (e) {
    case CUBLASLT_EPILOGUE_BIAS:
        return "BIAS";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
        return "GELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DGELU_BGRAD:
        return "DGELU_BGRAD";
    case CUBLASLT_EPILOGUE_BGRADA:
        return "BGRADA";
    case CUBLASLT_EPILOGUE_BGRADB:
        return "BGRADB";
    case CUBLASLT_EPILOGUE_DGELU:
        return "DGELU";
    default:
        return "?";
    }
}
static const char* tn(cudaDataType t) {
    return t == CUDA_R_32F ? "f32" : t == CUDA_R_16BF ? "bf16" : t == CUDA_R_16F ? "f16" : "?";
}

cublasLtHandle_t lt;
void* buf[6];

// D^T[N x M] = op(B)^T op(A)^T, exactly gemm_epilogue.cu's mapping; returns the heuristic status.
int probe(cudaDataType t, bool ta_, bool tb_, int M, int N, int K, cublasLtEpilogue_t epi,
          int bias_type, bool aux, int aux_ld, float beta, bool run, int* found_out) {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    int32_t ta = tb_ ? CUBLAS_OP_T : CUBLAS_OP_N, tb = ta_ ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, 4);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, 4);
    uint32_t e = epi;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, 4);
    void* bias = buf[3];
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
    if (bias_type != -2) {
        int32_t bt = bias_type;
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, 4);
    }
    if (aux) {
        void* ap = buf[4];
        int64_t ld = aux_ld;
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &ap,
                                       sizeof(ap));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, 8);
    }
    int brow = tb_ ? N : K, bcol = tb_ ? K : N, arow = ta_ ? K : M, acol = ta_ ? M : K;
    cublasLtMatrixLayoutCreate(&a, t, bcol, brow, bcol);
    cublasLtMatrixLayoutCreate(&b, t, acol, arow, acol);
    cublasLtMatrixLayoutCreate(&c, t, N, M, N);
    cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws = 32u << 20;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, 8);
    cublasLtMatmulHeuristicResult_t r{};
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 1, &r, &found);
    *found_out = found;
    if (run && st == CUBLAS_STATUS_SUCCESS && found) {
        float alpha = 0.75f;
        st = cublasLtMatmul(lt, op, &alpha, buf[1], a, buf[0], b, &beta, buf[2], c, buf[2], c,
                            &r.algo, buf[5], r.workspaceSize, 0);
        cudaDeviceSynchronize();
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatmulDescDestroy(op);
    return st;
}

static float bf(float x) {
    return __bfloat162float(__float2bfloat16(x));
}

int main() {
    printf("cublasLt version %zu, cudart %d\n", cublasLtGetVersion(), CUDART_VERSION);
    cublasLtCreate(&lt);
    for (int i = 0; i < 6; ++i) cudaMalloc(&buf[i], 256 << 20);
    cudaMemset(buf[0], 0, 256 << 20);
    cudaMemset(buf[1], 0, 256 << 20);
    struct E {
        cublasLtEpilogue_t e;
        bool ta, tb, aux;
    };
    // ops_cuda.cu's calls: gemm/linear bias (ta f, tb f), gelu fwd (f,f,aux), param grads
    // (ta t, tb f, BGRADA), gelu bwd (f, t, DGELU_BGRAD, aux)
    const E es[] = {{CUBLASLT_EPILOGUE_BIAS, false, false, false},
                    {CUBLASLT_EPILOGUE_GELU_AUX_BIAS, false, false, true},
                    {CUBLASLT_EPILOGUE_BGRADA, true, false, false},
                    {CUBLASLT_EPILOGUE_BGRADB, true, false, false},
                    {CUBLASLT_EPILOGUE_BGRADA, false, false, false},
                    {CUBLASLT_EPILOGUE_BGRADA, true, true, false},
                    {CUBLASLT_EPILOGUE_DGELU_BGRAD, false, true, true},
                    {CUBLASLT_EPILOGUE_DGELU_BGRAD, false, false, true},
                    {CUBLASLT_EPILOGUE_DGELU, false, true, true}};
    const int shapes[][3] = {{37, 40, 24}, {16384, 768, 3072}, {768, 3072, 16384}};
    for (cudaDataType t : {CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F})
        for (const E& x : es)
            for (int bt : {-2, -1, (int)t, (int)CUDA_R_32F})
                for (auto& s : shapes) {
                    int found = 0;
                    int st = probe(t, x.ta, x.tb, s[0], s[1], s[2], x.e, bt, x.aux, s[1],
                                   x.e == CUBLASLT_EPILOGUE_BGRADA ? 1.f : 0.f, true, &found);
                    printf("%-5s %-14s ta%d tb%d biastype %-5s M%-5d N%-5d K%-5d -> status %d "
                           "found %d\n",
                           tn(t), en(x.e), x.ta, x.tb,
                           bt == -2   ? "unset"
                           : bt == -1 ? "-1"
                                      : tn((cudaDataType)bt),
                           s[0], s[1], s[2], st, found);
                }
    // BIAS epilogue in bf16: one rounding (bf16(alpha ab + bias)) or two (bf16(bf16(alpha
    // ab)+bias))?
    {
        const int M = 33, N = 64, K = 17;
        std::mt19937 g(1);
        std::uniform_real_distribution<float> u(-1, 1);
        std::vector<__nv_bfloat16> A(M * K), B(K * N), bias(N), D(M * N);
        std::vector<float> fa(M * K), fb(K * N), fbias(N);
        for (int i = 0; i < M * K; ++i)
            A[i] = __float2bfloat16(u(g)), fa[i] = __bfloat162float(A[i]);
        for (int i = 0; i < K * N; ++i)
            B[i] = __float2bfloat16(u(g)), fb[i] = __bfloat162float(B[i]);
        for (int i = 0; i < N; ++i)
            bias[i] = __float2bfloat16(u(g)), fbias[i] = __bfloat162float(bias[i]);
        cudaMemcpy(buf[0], A.data(), M * K * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(buf[1], B.data(), K * N * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(buf[3], bias.data(), N * 2, cudaMemcpyHostToDevice);
        for (int bt : {-2, (int)CUDA_R_16BF, (int)CUDA_R_32F}) {
            if (bt == CUDA_R_32F) {
                std::vector<float> b32(fbias);
                cudaMemcpy(buf[3], b32.data(), N * 4, cudaMemcpyHostToDevice);
            }
            int found = 0;
            int st = probe(CUDA_R_16BF, false, false, M, N, K, CUBLASLT_EPILOGUE_BIAS, bt, false, 0,
                           0.f, true, &found);
            cudaMemcpy(D.data(), buf[2], M * N * 2, cudaMemcpyDeviceToHost);
            int one = 0, two = 0, neither = 0;
            for (int m = 0; m < M; ++m)
                for (int n = 0; n < N; ++n) {
                    double ab = 0;
                    for (int k = 0; k < K; ++k) ab += double(fa[m * K + k]) * fb[k * N + n];
                    float d = __bfloat162float(D[m * N + n]);
                    float r1 = bf(float(0.75 * ab + fbias[n])),
                          r2 = bf(bf(float(0.75 * ab)) + fbias[n]);
                    if (d == r1) ++one;
                    if (d == r2) ++two;
                    if (d != r1 && d != r2) ++neither;
                }
            printf("bf16 BIAS rounding (biastype %d, status %d found %d): equals one-rounding %d, "
                   "two-rounding %d, neither %d of %d\n",
                   bt, st, found, one, two, neither, M * N);
        }
    }
    return 0;
}
