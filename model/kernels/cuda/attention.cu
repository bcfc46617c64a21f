// Causal attention from cuBLAS GEMMs and the softmax kernels, one batch element at a time (its
// heads are one strided batch: head h starts h * hd columns into each row of qkv). The
// probabilities are stored in the activation dtype and the output is computed from them as
// stored, as on the CPU, so backward sees exactly what forward used.
#include "core/cuda/launch.h"
#include "model/kernels/cuda/attention.h"
#include "model/kernels/cuda/gemm.h"
#include "model/kernels/cuda/kernels.h"

#include <cmath>

namespace shardlab::cuda {

namespace {
// The views of batch element b's rows.
struct Heads {
    const char* q;
    const char* k;
    const char* v;
};
Heads heads_of(const void* qkv, int b, int T, int C, std::size_t es) {
    const char* base = static_cast<const char*>(qkv) + std::size_t(b) * T * 3 * C * es;
    return {base, base + std::size_t(C) * es, base + std::size_t(2) * C * es};
}
} // namespace

void attention_forward(const Cublas& blas, cudaStream_t s, void* out, void* att, const void* qkv,
                       int B, int T, int C, int H, DType t, float* scores) {
    const int hd = C / H;
    const std::size_t es = dtype_size(t), tt = std::size_t(T) * T;
    const float scale = 1.0f / std::sqrt(float(hd));
    for (int b = 0; b < B; ++b) {
        const Heads x = heads_of(qkv, b, T, C, es);
        char* att_b = static_cast<char*>(att) + std::size_t(b) * H * tt * es;
        char* out_b = static_cast<char*>(out) + std::size_t(b) * T * C * es;
        // scores_h = scale * Q_h K_h^T
        gemm(blas, s, t, DType::f32, false, true, T, T, hd, scale, {x.q, 3 * C, hd},
             {x.k, 3 * C, hd}, 0.0f, scores, T, (long long)tt, H);
        causal_softmax(s, att_b, scores, H, T, t);
        // out_h = P_h V_h, written into columns h * hd of out's rows
        gemm(blas, s, t, t, false, false, T, hd, T, 1.0f, {att_b, T, (long long)tt},
             {x.v, 3 * C, hd}, 0.0f, out_b, C, hd, H);
    }
}

void attention_backward(const Cublas& blas, cudaStream_t s, void* dqkv, const void* dout,
                        const void* qkv, const void* att, int B, int T, int C, int H, DType t,
                        float* dprob, void* dscore) {
    const int hd = C / H;
    const std::size_t es = dtype_size(t), tt = std::size_t(T) * T;
    const float scale = 1.0f / std::sqrt(float(hd));
    for (int b = 0; b < B; ++b) {
        const Heads x = heads_of(qkv, b, T, C, es);
        const char* att_b = static_cast<const char*>(att) + std::size_t(b) * H * tt * es;
        const char* dout_b = static_cast<const char*>(dout) + std::size_t(b) * T * C * es;
        char* dq = static_cast<char*>(dqkv) + std::size_t(b) * T * 3 * C * es;
        char* dk = dq + std::size_t(C) * es;
        char* dv = dq + std::size_t(2) * C * es;
        // dP_h = dO_h V_h^T, then dS_h = softmax'(P_h, dP_h) * scale
        gemm(blas, s, t, DType::f32, false, true, T, T, hd, 1.0f, {dout_b, C, hd}, {x.v, 3 * C, hd},
             0.0f, dprob, T, (long long)tt, H);
        causal_softmax_backward(s, dscore, dprob, att_b, H, T, scale, t);
        // dQ_h = dS_h K_h;  dK_h = dS_h^T Q_h;  dV_h = P_h^T dO_h
        gemm(blas, s, t, t, false, false, T, hd, T, 1.0f, {dscore, T, (long long)tt},
             {x.k, 3 * C, hd}, 0.0f, dq, 3 * C, hd, H);
        gemm(blas, s, t, t, true, false, T, hd, T, 1.0f, {dscore, T, (long long)tt},
             {x.q, 3 * C, hd}, 0.0f, dk, 3 * C, hd, H);
        gemm(blas, s, t, t, true, false, T, hd, T, 1.0f, {att_b, T, (long long)tt}, {dout_b, C, hd},
             0.0f, dv, 3 * C, hd, H);
    }
}

} // namespace shardlab::cuda
