// Attention, one (batch, head) pair per OpenMP iteration. Each pair first copies its q, k, v into
// fp32 (or double) buffers — k and v also transposed — so every inner loop runs over contiguous
// memory with no reduction in its innermost dimension, and vectorizes. Every sum runs in a fixed
// order on one thread, so results do not depend on the thread count.
#include "model/kernels/cpu/attention.h"

#include "model/kernels/cpu/vec_math.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace shardlab::cpu {

namespace {
// Copies one head's slice (columns col .. col+hd of each row) into dense rows, or transposed.
template <typename T, typename A>
void load_head(const T* base, std::size_t row, int col, int T_, int hd, A* out, bool transposed) {
    for (int t = 0; t < T_; ++t)
        for (int e = 0; e < hd; ++e) {
            const A v = to_acc(base[t * row + col + e]);
            if (transposed)
                out[std::size_t(e) * T_ + t] = v;
            else
                out[std::size_t(t) * hd + e] = v;
        }
}
} // namespace

template <typename T>
void attention_forward(T* out, T* att, const T* qkv, int B, int T_, int C, int H) {
    using A = acc_t<T>;
    const int hd = C / H;
    const A scale = A(1) / std::sqrt(A(hd));
    const std::size_t row = std::size_t(3) * C;
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            const std::size_t n = std::size_t(T_) * hd;
            std::vector<A> q(n), kt(n), v(n), s(T_), o(hd);
            const T* base = qkv + std::size_t(b) * T_ * row;
            load_head(base, row, h * hd, T_, hd, q.data(), false);
            load_head(base, row, C + h * hd, T_, hd, kt.data(), true);
            load_head(base, row, 2 * C + h * hd, T_, hd, v.data(), false);
            for (int i = 0; i < T_; ++i) {
                std::fill(s.begin(), s.begin() + i + 1, A(0)); // scores of row i, j <= i
                for (int e = 0; e < hd; ++e) {
                    const A qe = q[std::size_t(i) * hd + e] * scale;
                    const A* k = kt.data() + std::size_t(e) * T_;
                    for (int j = 0; j <= i; ++j) s[j] += qe * k[j];
                }
                const A maxv = *std::max_element(s.begin(), s.begin() + i + 1);
                for (int j = 0; j <= i; ++j) s[j] = vexp(s[j] - maxv);
                A sum = 0;
                for (int j = 0; j <= i; ++j) sum += s[j];
                T* a = att + ((std::size_t(b) * H + h) * T_ + i) * T_;
                for (int j = 0; j < T_; ++j) a[j] = from_acc<T>(j <= i ? s[j] / sum : A(0));
                // The output uses the probabilities as stored, as backward will see them.
                std::fill(o.begin(), o.end(), A(0));
                for (int j = 0; j <= i; ++j) {
                    const A pj = to_acc(a[j]);
                    const A* vj = v.data() + std::size_t(j) * hd;
                    for (int e = 0; e < hd; ++e) o[e] += pj * vj[e];
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
            const std::size_t n = std::size_t(T_) * hd;
            std::vector<A> q(n), k(n), vt(n), go(n), dq(n, 0), dk(n, 0), dv(n, 0), dp(T_), p(T_);
            const T* base = qkv + std::size_t(b) * T_ * row;
            load_head(base, row, h * hd, T_, hd, q.data(), false);
            load_head(base, row, C + h * hd, T_, hd, k.data(), false);
            load_head(base, row, 2 * C + h * hd, T_, hd, vt.data(), true);
            load_head(dout + std::size_t(b) * T_ * C, std::size_t(C), h * hd, T_, hd, go.data(),
                      false);
            for (int i = 0; i < T_; ++i) {
                const T* a = att + ((std::size_t(b) * H + h) * T_ + i) * T_;
                for (int j = 0; j <= i; ++j) p[j] = to_acc(a[j]), dp[j] = 0;
                const A* goi = go.data() + std::size_t(i) * hd;
                for (int e = 0; e < hd; ++e) { // dP_ij = dO_i . V_j
                    const A* ve = vt.data() + std::size_t(e) * T_;
                    for (int j = 0; j <= i; ++j) dp[j] += goi[e] * ve[j];
                }
                A dot = 0; // sum_j P_ij dP_ij: the softmax's backward
                for (int j = 0; j <= i; ++j) dot += p[j] * dp[j];
                A* dqi = dq.data() + std::size_t(i) * hd;
                const A* qi = q.data() + std::size_t(i) * hd;
                for (int j = 0; j <= i; ++j) {
                    const A ds = p[j] * (dp[j] - dot) * scale;
                    const A* kj = k.data() + std::size_t(j) * hd;
                    A* dkj = dk.data() + std::size_t(j) * hd;
                    A* dvj = dv.data() + std::size_t(j) * hd;
                    for (int e = 0; e < hd; ++e) {
                        dqi[e] += ds * kj[e];
                        dkj[e] += ds * qi[e];
                        dvj[e] += p[j] * goi[e];
                    }
                }
            }
            for (int t = 0; t < T_; ++t) {
                T* d = dqkv + (std::size_t(b) * T_ + t) * row + h * hd;
                for (int e = 0; e < hd; ++e) {
                    d[e] = from_acc<T>(dq[std::size_t(t) * hd + e]);
                    d[C + e] = from_acc<T>(dk[std::size_t(t) * hd + e]);
                    d[2 * C + e] = from_acc<T>(dv[std::size_t(t) * hd + e]);
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
