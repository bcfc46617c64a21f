// Rows in parallel, in groups (row_groups.h), each row's sums in one thread in index order (the
// same bits at any thread count). dweight sums over rows: each thread sums a block of columns,
// streaming its slice of every row, so no two threads write the same weight gradient and the row
// order is fixed; the rows' sum is added to dweight once at the end (as layernorm's, and the CUDA
// kernel's: the same bits as it).
//   y = w * x * r, r = (mean(x^2) + eps)^-1/2
//   dx = r * (w * dy) - x * r^3 * mean(w * dy * x)          dw = sum over rows of dy * x * r
#include "model/kernels/cpu/rmsnorm.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/parallel.h"
#include "model/kernels/cpu/row_groups.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace shardlab::cpu {

namespace {
// R rows: 1/rms and the scaled rows.
template <int R, typename T>
SHARDLAB_TARGET_CLONES void rmsnorm_rows(T* __restrict y, acc_t<T>* __restrict rstd,
                                         const T* __restrict x, const T* __restrict weight, int C,
                                         float eps) {
    using A = acc_t<T>;
    A ss[R] = {};
    for (int i = 0; i < C; ++i)
        for (int j = 0; j < R; ++j) {
            const A v = to_acc(x[std::size_t(j) * C + i]);
            ss[j] += v * v;
        }
    for (int j = 0; j < R; ++j) {
        const A r = A(1) / std::sqrt(ss[j] / A(C) + A(eps));
        rstd[j] = r;
        const T* xr = x + std::size_t(j) * C;
        T* yr = y + std::size_t(j) * C;
        for (int i = 0; i < C; ++i) yr[i] = from_acc<T>(to_acc(weight[i]) * (to_acc(xr[i]) * r));
    }
}

// R rows of dinp += the RMSNorm's input gradient. dx may be dy: each row's sum reads all of dy
// before any of dx is written. The sum's terms are computed kGroupCols columns at a time, row by
// row (vectorised), then added in column order with the rows' chains interleaved.
template <int R, typename T>
SHARDLAB_TARGET_CLONES void rmsnorm_backward_rows(T* dx, const T* dy, const T* __restrict x,
                                                  const T* __restrict weight,
                                                  const acc_t<T>* __restrict rstd, int C) {
    using A = acc_t<T>;
    A dot[R] = {}; // mean(w * dy * x)
    A terms[R][kGroupCols];
    for (int c0 = 0; c0 < C; c0 += kGroupCols) {
        const int n = std::min(kGroupCols, C - c0);
        for (int j = 0; j < R; ++j)
            for (int k = 0; k < n; ++k) {
                const std::size_t i = std::size_t(j) * C + c0 + k;
                terms[j][k] = to_acc(weight[c0 + k]) * to_acc(dy[i]) * to_acc(x[i]);
            }
        add_in_order(dot, terms, n);
    }
    for (int j = 0; j < R; ++j) {
        const A r = rstd[j], d = dot[j] / A(C);
        for (int c = 0; c < C; ++c) {
            const std::size_t i = std::size_t(j) * C + c;
            const A g = r * to_acc(weight[c]) * to_acc(dy[i]) - to_acc(x[i]) * r * r * r * d;
            dx[i] = from_acc<T>(to_acc(dx[i]) + g);
        }
    }
}

// dw[c - lo] += dy * x * rstd over the rows in order, columns lo .. hi: each thread streams its
// slice of every row.
template <typename T>
SHARDLAB_TARGET_CLONES void
weight_grad_range(acc_t<T>* __restrict dw, const T* __restrict dout, const T* __restrict inp,
                  const acc_t<T>* __restrict rstd, int N, int C, std::size_t lo, std::size_t hi) {
    for (int n = 0; n < N; ++n) {
        const T* dy = dout + std::size_t(n) * C;
        const T* x = inp + std::size_t(n) * C;
        for (std::size_t i = lo; i < hi; ++i) dw[i - lo] += to_acc(dy[i]) * to_acc(x[i]) * rstd[n];
    }
}
} // namespace

template <typename T>
void rmsnorm_forward(T* out, acc_t<T>* rstd, const T* inp, const T* weight, int N, int C,
                     float eps) {
    for_row_groups(N, [&]<int R>(int n) {
        const std::size_t at = std::size_t(n) * C;
        rmsnorm_rows<R>(out + at, rstd + n, inp + at, weight, C, eps);
    });
}

template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                      const acc_t<T>* rstd, int N, int C) {
    using A = acc_t<T>;
    for_row_groups(N, [&]<int R>(int n) {
        const std::size_t at = std::size_t(n) * C;
        rmsnorm_backward_rows<R>(dinp + at, dout + at, inp + at, weight, rstd + n, C);
    });
    parallel_ranges(std::size_t(C), [&](std::size_t lo, std::size_t hi) {
        std::vector<A> dw(hi - lo, A(0));
        weight_grad_range(dw.data(), dout, inp, rstd, N, C, lo, hi);
        for (std::size_t i = lo; i < hi; ++i)
            dweight[i] = from_acc<T>(to_acc(dweight[i]) + dw[i - lo]);
    });
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void rmsnorm_forward<T>(T*, acc_t<T>*, const T*, const T*, int, int, float);          \
    template void rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const acc_t<T>*, int,  \
                                      int);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
