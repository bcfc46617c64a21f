// LayerNorm: rows in parallel, in groups (row_groups.h), for the normalisation and dinp; columns
// in parallel for the weight / bias gradients (each a sum over rows, in row order: thread-count
// independent; each thread streams its slice of every row).
#include "model/kernels/cpu/layernorm.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/parallel.h"
#include "model/kernels/cpu/residual.h"
#include "model/kernels/cpu/row_groups.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace shardlab::cpu {

namespace {
// The weight and bias gradients of columns lo .. hi: sums over the rows in order, each thread
// streaming its slice of every row.
template <typename T>
SHARDLAB_TARGET_CLONES void param_grads_range(acc_t<T>* __restrict dw, acc_t<T>* __restrict db,
                                              const T* __restrict dout, const T* __restrict inp,
                                              const acc_t<T>* mean, const acc_t<T>* rstd, int N,
                                              int C, std::size_t lo, std::size_t hi) {
    using A = acc_t<T>;
    for (int r = 0; r < N; ++r) {
        const T* dy = dout + std::size_t(r) * C;
        const T* x = inp + std::size_t(r) * C;
        const A m = mean[r], s = rstd[r];
        for (std::size_t c = lo; c < hi; ++c) {
            const A d = to_acc(dy[c]);
            dw[c - lo] += d * (to_acc(x[c]) - m) * s;
            db[c - lo] += d;
        }
    }
}

// R rows: means, 1/std, and the normalised, scaled, shifted outputs.
template <int R, typename T>
SHARDLAB_TARGET_CLONES void
layernorm_rows(T* __restrict y, acc_t<T>* __restrict mean, acc_t<T>* __restrict rstd,
               const T* __restrict x, const T* __restrict weight, const T* __restrict bias, int C) {
    using A = acc_t<T>;
    A m[R] = {}, v[R] = {};
    for (int c = 0; c < C; ++c)
        for (int j = 0; j < R; ++j) m[j] += to_acc(x[std::size_t(j) * C + c]);
    for (int j = 0; j < R; ++j) m[j] /= C;
    for (int c = 0; c < C; ++c)
        for (int j = 0; j < R; ++j) {
            const A d = to_acc(x[std::size_t(j) * C + c]) - m[j];
            v[j] += d * d;
        }
    for (int j = 0; j < R; ++j) {
        const A s = A(1) / std::sqrt(v[j] / C + A(1e-5));
        const T* xr = x + std::size_t(j) * C;
        T* yr = y + std::size_t(j) * C;
        for (int c = 0; c < C; ++c)
            yr[c] = from_acc<T>((to_acc(xr[c]) - m[j]) * s * to_acc(weight[c]) + to_acc(bias[c]));
        mean[j] = m[j];
        rstd[j] = s;
    }
}

// R rows of dinp += the LayerNorm's input gradient. dx may be dy: each row's sums read all of dy
// before any of dx is written. The sums' terms are computed kGroupCols columns at a time, row by
// row (vectorised), then added in column order with the rows' chains interleaved.
template <int R, typename T>
SHARDLAB_TARGET_CLONES void
layernorm_backward_rows(T* dx, const T* dy, const T* __restrict x, const T* __restrict weight,
                        const acc_t<T>* __restrict mean, const acc_t<T>* __restrict rstd, int C) {
    using A = acc_t<T>;
    A dnorm_mean[R] = {}, dnorm_norm_mean[R] = {};
    A dnorm[R][kGroupCols], dnorm_xhat[R][kGroupCols];
    for (int c0 = 0; c0 < C; c0 += kGroupCols) {
        const int n = std::min(kGroupCols, C - c0);
        for (int j = 0; j < R; ++j)
            for (int k = 0; k < n; ++k) {
                const std::size_t i = std::size_t(j) * C + c0 + k;
                const A xhat = (to_acc(x[i]) - mean[j]) * rstd[j];
                dnorm[j][k] = to_acc(weight[c0 + k]) * to_acc(dy[i]);
                dnorm_xhat[j][k] = dnorm[j][k] * xhat;
            }
        add_in_order(dnorm_mean, dnorm, n);
        add_in_order(dnorm_norm_mean, dnorm_xhat, n);
    }
    for (int j = 0; j < R; ++j) {
        const A dm = dnorm_mean[j] / C, dnm = dnorm_norm_mean[j] / C;
        for (int c = 0; c < C; ++c) {
            const std::size_t i = std::size_t(j) * C + c;
            const A xhat = (to_acc(x[i]) - mean[j]) * rstd[j];
            const A dnorm = to_acc(weight[c]) * to_acc(dy[i]);
            dx[i] = from_acc<T>(to_acc(dx[i]) + (dnorm - dm - xhat * dnm) * rstd[j]);
        }
    }
}
} // namespace

template <typename T>
void layernorm_forward(T* out, acc_t<T>* mean, acc_t<T>* rstd, const T* inp, const T* weight,
                       const T* bias, int N, int C) {
    for_row_groups(N, [&]<int R>(int r) {
        const std::size_t at = std::size_t(r) * C;
        layernorm_rows<R>(out + at, mean + r, rstd + r, inp + at, weight, bias, C);
    });
}

template <typename T>
void residual_layernorm_forward(T* residual, const T* x, T* out, acc_t<T>* mean, acc_t<T>* rstd,
                                const T* weight, const T* bias, int N, int C) {
    for_row_groups(N, [&]<int R>(int r) { // the rows are still in L1 when the norm reads them
        const std::size_t at = std::size_t(r) * C;
        add_values(residual + at, residual + at, x + at, std::size_t(R) * C); // as accumulate
        layernorm_rows<R>(out + at, mean + r, rstd + r, residual + at, weight, bias, C);
    });
}

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const acc_t<T>* mean, const acc_t<T>* rstd, int N, int C) {
    using A = acc_t<T>;
    for_row_groups(N, [&]<int R>(int r) {
        const std::size_t at = std::size_t(r) * C;
        layernorm_backward_rows<R>(dinp + at, dout + at, inp + at, weight, mean + r, rstd + r, C);
    });
    parallel_ranges(std::size_t(C), [&](std::size_t lo, std::size_t hi) {
        std::vector<A> dw(hi - lo, A(0)), db(hi - lo, A(0));
        param_grads_range(dw.data(), db.data(), dout, inp, mean, rstd, N, C, lo, hi);
        for (std::size_t c = lo; c < hi; ++c) {
            dweight[c] = from_acc<T>(to_acc(dweight[c]) + dw[c - lo]);
            dbias[c] = from_acc<T>(to_acc(dbias[c]) + db[c - lo]);
        }
    });
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void layernorm_forward<T>(T*, acc_t<T>*, acc_t<T>*, const T*, const T*, const T*,     \
                                       int, int);                                                  \
    template void residual_layernorm_forward<T>(T*, const T*, T*, acc_t<T>*, acc_t<T>*, const T*,  \
                                                const T*, int, int);                               \
    template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const acc_t<T>*, \
                                        const acc_t<T>*, int, int);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
