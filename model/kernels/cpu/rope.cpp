// The angles are computed in double and rounded once to the compute type, so fp32 and bf16 runs
// rotate by the same cos and sin (Hugging Face computes inv_freq in fp32 then cos/sin in fp32;
// the difference is below fp32's rounding of the product, argued in the test).
#include "model/kernels/cpu/rope.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/parallel.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace shardlab::cpu {

namespace {
// cos and sin of every (position, pair) a call uses, [position][pair], rounded once to A: the
// angles depend on the position alone, so the B sequences of a batch share them (computing them
// per row made RoPE compute-bound on the CPU).
template <typename A>
void angle_table(std::size_t positions, int D, const Rope& rope, std::vector<A>& cos_t,
                 std::vector<A>& sin_t) {
    const int half = D / 2;
    std::vector<double> freq(static_cast<std::size_t>(half));
    for (int j = 0; j < half; ++j) freq[std::size_t(j)] = rope_frequency(rope, j, D);
    cos_t.resize(positions * std::size_t(half));
    sin_t.resize(cos_t.size());
    parallel_ranges(positions, [&](std::size_t lo, std::size_t hi) {
        for (std::size_t p = lo; p < hi; ++p)
            for (int j = 0; j < half; ++j) {
                const double angle = double(p) * freq[std::size_t(j)];
                cos_t[p * std::size_t(half) + std::size_t(j)] = A(std::cos(angle));
                sin_t[p * std::size_t(half) + std::size_t(j)] = A(std::sin(angle));
            }
    });
}

// One row's heads rotated by its position's cos and sin (c, s: one per pair). sign +1: forward
// rotation; -1: its inverse (backward: -A(sin) is A(-sin), rounding being symmetric).
template <typename T>
SHARDLAB_TARGET_CLONES void rotate_row(T* __restrict row, const acc_t<T>* __restrict c,
                                       const acc_t<T>* __restrict s, int heads, int D, int sign) {
    using A = acc_t<T>;
    const int half = D / 2;
    for (int h = 0; h < heads; ++h) {
        T* v = row + std::size_t(h) * std::size_t(D);
        for (int j = 0; j < half; ++j) {
            const A sj = sign > 0 ? s[j] : -s[j];
            const A a = to_acc(v[j]), b = to_acc(v[j + half]);
            v[j] = from_acc<T>(a * c[j] - b * sj);
            v[j + half] = from_acc<T>(b * c[j] + a * sj);
        }
    }
}

template <typename T>
void rotate(T* x, int rows, int T_, int heads, int D, int stride, const Rope& rope, int sign) {
    using A = acc_t<T>;
    const std::size_t half = std::size_t(D / 2);
    std::vector<A> cos_t, sin_t;
    angle_table(std::min(std::size_t(T_), std::size_t(rows)), D, rope, cos_t, sin_t);
    parallel_ranges(std::size_t(rows), [&](std::size_t lo, std::size_t hi) {
        for (std::size_t r = lo; r < hi; ++r) {
            const std::size_t at = (r % std::size_t(T_)) * half;
            rotate_row(x + r * std::size_t(stride), cos_t.data() + at, sin_t.data() + at, heads, D,
                       sign);
        }
    });
}
} // namespace

template <typename T>
void rope_forward(T* x, int rows, int T_, int heads, int head_dim, int stride, const Rope& rope) {
    rotate(x, rows, T_, heads, head_dim, stride, rope, +1);
}

template <typename T>
void rope_backward(T* dx, int rows, int T_, int heads, int head_dim, int stride, const Rope& rope) {
    rotate(dx, rows, T_, heads, head_dim, stride, rope, -1);
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void rope_forward<T>(T*, int, int, int, int, int, const Rope&);                       \
    template void rope_backward<T>(T*, int, int, int, int, int, const Rope&);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
