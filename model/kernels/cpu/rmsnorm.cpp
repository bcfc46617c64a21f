// Rows in parallel, each row's sums in one thread in index order (the same bits at any thread
// count). dweight sums over rows: each thread sums a block of columns over every row, so no two
// threads write the same weight gradient and the row order is fixed; the rows' sum is added to
// dweight once at the end (as layernorm's, and the CUDA kernel's: the same bits as it).
//   y = w * x * r, r = (mean(x^2) + eps)^-1/2
//   dx = r * (w * dy) - x * r^3 * mean(w * dy * x)          dw = sum over rows of dy * x * r
#include "model/kernels/cpu/rmsnorm.h"

#include "model/kernels/cpu/parallel.h"

#include <cmath>

namespace shardlab::cpu {

template <typename T>
void rmsnorm_forward(T* out, acc_t<T>* rstd, const T* inp, const T* weight, int N, int C,
                     float eps) {
    using A = acc_t<T>;
    parallel_ranges(std::size_t(N), [&](std::size_t lo, std::size_t hi) {
        for (std::size_t n = lo; n < hi; ++n) {
            const T* x = inp + n * std::size_t(C);
            A ss = 0;
            for (int i = 0; i < C; ++i) ss += to_acc(x[i]) * to_acc(x[i]);
            const A r = A(1) / std::sqrt(ss / A(C) + A(eps));
            rstd[n] = r;
            T* y = out + n * std::size_t(C);
            for (int i = 0; i < C; ++i) y[i] = from_acc<T>(to_acc(weight[i]) * (to_acc(x[i]) * r));
        }
    });
}

template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                      const acc_t<T>* rstd, int N, int C) {
    using A = acc_t<T>;
    parallel_ranges(std::size_t(N), [&](std::size_t lo, std::size_t hi) {
        for (std::size_t n = lo; n < hi; ++n) {
            const T* x = inp + n * std::size_t(C);
            const T* dy = dout + n * std::size_t(C);
            const A r = rstd[n];
            A dot = 0; // mean(w * dy * x)
            for (int i = 0; i < C; ++i) dot += to_acc(weight[i]) * to_acc(dy[i]) * to_acc(x[i]);
            dot /= A(C);
            T* dx = dinp + n * std::size_t(C);
            for (int i = 0; i < C; ++i) {
                const A g = r * to_acc(weight[i]) * to_acc(dy[i]) - to_acc(x[i]) * r * r * r * dot;
                dx[i] = from_acc<T>(to_acc(dx[i]) + g);
            }
        }
    });
    parallel_ranges(std::size_t(C), [&](std::size_t lo, std::size_t hi) {
        for (std::size_t i = lo; i < hi; ++i) {
            A s = 0;
            for (std::size_t n = 0; n < std::size_t(N); ++n)
                s += to_acc(dout[n * std::size_t(C) + i]) * to_acc(inp[n * std::size_t(C) + i]) *
                     rstd[n];
            dweight[i] = from_acc<T>(to_acc(dweight[i]) + s);
        }
    });
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void rmsnorm_forward<T>(T*, acc_t<T>*, const T*, const T*, int, int, float);          \
    template void rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const acc_t<T>*, int,  \
                                      int);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
