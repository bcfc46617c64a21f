// Linear forward / backward on top of gemm<T>.
#include "model/kernels/cpu/linear.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/gemm.h"
#include "model/kernels/cpu/parallel.h"

#include <cstddef>
#include <cstring>
#include <vector>

namespace shardlab::cpu {

namespace {
// acc[c - lo] += src[r, c] for every row r in order, columns lo .. hi: each thread streams its
// slice of every row (contiguous, vectorized) instead of walking a column down with stride cols.
template <typename T>
SHARDLAB_TARGET_CLONES void column_sums_range(acc_t<T>* __restrict acc, const T* __restrict src,
                                              int rows, int cols, std::size_t lo, std::size_t hi) {
    for (int r = 0; r < rows; ++r) {
        const T* row = src + std::size_t(r) * cols;
        for (std::size_t c = lo; c < hi; ++c) acc[c - lo] += to_acc(row[c]);
    }
}
} // namespace

template <typename T>
void add_column_sums(T* dst, const T* src, int rows, int cols) {
    parallel_ranges(std::size_t(cols), [&](std::size_t lo, std::size_t hi) {
        std::vector<acc_t<T>> acc(hi - lo, acc_t<T>(0));
        column_sums_range(acc.data(), src, rows, cols, lo, hi);
        for (std::size_t c = lo; c < hi; ++c) dst[c] = from_acc<T>(to_acc(dst[c]) + acc[c - lo]);
    });
}

template <typename T>
void bias_rows(T* out, const T* bias, int rows, int cols) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; ++r) std::memcpy(out + std::size_t(r) * cols, bias, sizeof(T) * cols);
}

template <typename T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int N, int IC, int OC,
                    float* ws) {
    // Start from the bias and let the GEMM add into it: one rounding for 16-bit storage.
    bias_rows(out, bias, N, OC);
    gemm<T>(false, false, N, OC, IC, 1.0f, inp, IC, weight, OC, 1.0f, out, OC, ws);
}

template <typename T>
void linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                     int N, int IC, int OC, float* ws) {
    gemm<T>(false, true, N, IC, OC, 1.0f, dout, OC, weight, OC, 0.0f, dinp, IC, ws); // dout W^T
    gemm<T>(true, false, IC, OC, N, 1.0f, inp, IC, dout, OC, 1.0f, dweight, OC,
            ws); // += inp^T dout
    add_column_sums(dbias, dout, N, OC);
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void add_column_sums<T>(T*, const T*, int, int);                                      \
    template void bias_rows<T>(T*, const T*, int, int);                                            \
    template void linear_forward<T>(T*, const T*, const T*, const T*, int, int, int, float*);      \
    template void linear_backward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, int,      \
                                     float*);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
