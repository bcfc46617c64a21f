// LayerNorm: rows in parallel for the normalisation and dinp; columns in parallel for the
// weight / bias gradients (each a sum over rows, in row order: thread-count independent; each
// thread streams its slice of every row).
#include "model/kernels/cpu/layernorm.h"

#include "model/kernels/cpu/parallel.h"
#include "model/kernels/cpu/target_clones.h"

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
} // namespace

namespace {
// One row: mean, 1/std, and the normalised, scaled, shifted output.
template <typename T>
SHARDLAB_TARGET_CLONES void layernorm_row(T* __restrict y, acc_t<T>& mean, acc_t<T>& rstd,
                                          const T* __restrict x, const T* __restrict weight,
                                          const T* __restrict bias, int C) {
    using A = acc_t<T>;
    A m = 0;
    for (int c = 0; c < C; ++c) m += to_acc(x[c]);
    m /= C;
    A v = 0;
    for (int c = 0; c < C; ++c) {
        A d = to_acc(x[c]) - m;
        v += d * d;
    }
    const A s = A(1) / std::sqrt(v / C + A(1e-5));
    for (int c = 0; c < C; ++c)
        y[c] = from_acc<T>((to_acc(x[c]) - m) * s * to_acc(weight[c]) + to_acc(bias[c]));
    mean = m;
    rstd = s;
}

// residual[c] += x[c] for one row, rounded to the storage type as the separate add would.
template <typename T>
SHARDLAB_TARGET_CLONES void add_row(T* __restrict residual, const T* __restrict x, int C) {
    for (int c = 0; c < C; ++c) residual[c] = from_acc<T>(to_acc(residual[c]) + to_acc(x[c]));
}
} // namespace

template <typename T>
void layernorm_forward(T* out, acc_t<T>* mean, acc_t<T>* rstd, const T* inp, const T* weight,
                       const T* bias, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; ++r)
        layernorm_row(out + std::size_t(r) * C, mean[r], rstd[r], inp + std::size_t(r) * C, weight,
                      bias, C);
}

template <typename T>
void residual_layernorm_forward(T* residual, const T* x, T* out, acc_t<T>* mean, acc_t<T>* rstd,
                                const T* weight, const T* bias, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; ++r) { // the row is still in L1 when the norm reads it back
        T* res = residual + std::size_t(r) * C;
        add_row(res, x + std::size_t(r) * C, C);
        layernorm_row(out + std::size_t(r) * C, mean[r], rstd[r], res, weight, bias, C);
    }
}

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const acc_t<T>* mean, const acc_t<T>* rstd, int N, int C) {
    using A = acc_t<T>;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; ++r) {
        const T* x = inp + std::size_t(r) * C;
        const T* dy = dout + std::size_t(r) * C;
        A dnorm_mean = 0, dnorm_norm_mean = 0;
        for (int c = 0; c < C; ++c) {
            const A xhat = (to_acc(x[c]) - mean[r]) * rstd[r];
            const A dnorm = to_acc(weight[c]) * to_acc(dy[c]);
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * xhat;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        T* dx = dinp + std::size_t(r) * C;
        for (int c = 0; c < C; ++c) {
            const A xhat = (to_acc(x[c]) - mean[r]) * rstd[r];
            const A dnorm = to_acc(weight[c]) * to_acc(dy[c]);
            dx[c] = from_acc<T>(to_acc(dx[c]) +
                                (dnorm - dnorm_mean - xhat * dnorm_norm_mean) * rstd[r]);
        }
    }
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
