// Attention, one (batch, head) pair per OpenMP iteration: every reduction inside runs in a fixed
// order on one thread, so the result does not depend on the thread count.
#include "model/kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace shardlab::cpu {

template <typename T>
void attention_forward(T* out, T* att, const T* qkv, int B, int T_, int C, int H) {
    using A = acc_t<T>;
    const int hd = C / H;
    const A scale = A(1) / std::sqrt(A(hd));
    const std::size_t row = std::size_t(3) * C;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            std::vector<A> p(T_), o(hd);
            const T* base = qkv + std::size_t(b) * T_ * row;
            for (int i = 0; i < T_; ++i) {
                const T* q = base + i * row + h * hd;
                A maxv = -INFINITY;
                for (int j = 0; j <= i; ++j) {
                    const T* k = base + j * row + C + h * hd;
                    A s = 0;
                    for (int e = 0; e < hd; ++e) s += to_acc(q[e]) * to_acc(k[e]);
                    p[j] = s * scale;
                    maxv = std::max(maxv, p[j]);
                }
                A sum = 0;
                for (int j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - maxv));
                T* a = att + ((std::size_t(b) * H + h) * T_ + i) * T_;
                for (int j = 0; j < T_; ++j) a[j] = from_acc<T>(j <= i ? p[j] / sum : A(0));
                std::fill(o.begin(), o.end(), A(0));
                for (int j = 0; j <= i; ++j) {
                    const A pj = to_acc(a[j]);
                    const T* v = base + j * row + 2 * C + h * hd;
                    for (int e = 0; e < hd; ++e) o[e] += pj * to_acc(v[e]);
                }
                T* y = out + (std::size_t(b) * T_ + i) * C + h * hd;
                for (int e = 0; e < hd; ++e) y[e] = from_acc<T>(o[e]);
            }
        }
}

template <typename T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, int B, int T_, int C,
                        int H) {
    using A = acc_t<T>;
    const int hd = C / H;
    const A scale = A(1) / std::sqrt(A(hd));
    const std::size_t row = std::size_t(3) * C;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            // fp32 (or double) accumulators for this head's dq, dk, dv; rounded once at the end.
            std::vector<A> dq(std::size_t(T_) * hd, 0), dk(std::size_t(T_) * hd, 0),
                dv(std::size_t(T_) * hd, 0);
            std::vector<A> dp(T_);
            const T* base = qkv + std::size_t(b) * T_ * row;
            for (int i = 0; i < T_; ++i) {
                const T* a = att + ((std::size_t(b) * H + h) * T_ + i) * T_;
                const T* go = dout + (std::size_t(b) * T_ + i) * C + h * hd;
                A dot = 0; // sum_j P_ij dP_ij, for the softmax backward
                for (int j = 0; j <= i; ++j) {
                    const T* v = base + j * row + 2 * C + h * hd;
                    A s = 0;
                    for (int e = 0; e < hd; ++e) s += to_acc(go[e]) * to_acc(v[e]);
                    dp[j] = s;
                    dot += to_acc(a[j]) * s;
                    const A pij = to_acc(a[j]);
                    for (int e = 0; e < hd; ++e) dv[std::size_t(j) * hd + e] += pij * to_acc(go[e]);
                }
                const T* q = base + i * row + h * hd;
                for (int j = 0; j <= i; ++j) {
                    const A ds = to_acc(a[j]) * (dp[j] - dot) * scale;
                    const T* k = base + j * row + C + h * hd;
                    for (int e = 0; e < hd; ++e) {
                        dq[std::size_t(i) * hd + e] += ds * to_acc(k[e]);
                        dk[std::size_t(j) * hd + e] += ds * to_acc(q[e]);
                    }
                }
            }
            for (int i = 0; i < T_; ++i) {
                T* d = dqkv + (std::size_t(b) * T_ + i) * row + h * hd;
                for (int e = 0; e < hd; ++e) {
                    d[e] = from_acc<T>(dq[std::size_t(i) * hd + e]);
                    d[C + e] = from_acc<T>(dk[std::size_t(i) * hd + e]);
                    d[2 * C + e] = from_acc<T>(dv[std::size_t(i) * hd + e]);
                }
            }
        }
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void attention_forward<T>(T*, T*, const T*, int, int, int, int);                      \
    template void attention_backward<T>(T*, const T*, const T*, const T*, int, int, int, int);
SHARDLAB_INSTANTIATE(float)
SHARDLAB_INSTANTIATE(double)
SHARDLAB_INSTANTIATE(bf16_t)
SHARDLAB_INSTANTIATE(f16_t)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
