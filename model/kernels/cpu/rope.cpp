// The angles are computed in double and rounded once to the compute type, so fp32 and bf16 runs
// rotate by the same cos and sin (Hugging Face computes inv_freq in fp32 then cos/sin in fp32;
// the difference is below fp32's rounding of the product, argued in the test).
#include "model/kernels/cpu/rope.h"

#include "model/kernels/cpu/parallel.h"

#include <cmath>

namespace shardlab::cpu {

namespace {
// sign +1: forward rotation; -1: its inverse (backward).
template <typename T>
void rotate(T* x, int rows, int T_, int heads, int D, int stride, const Rope& rope, int sign) {
    using A = acc_t<T>;
    const int half = D / 2;
    parallel_ranges(std::size_t(rows), [&](std::size_t lo, std::size_t hi) {
        for (std::size_t r = lo; r < hi; ++r) {
            const double p = double(r % std::size_t(T_));
            for (int j = 0; j < half; ++j) {
                const double angle = p * rope_frequency(rope, j, D);
                const A c = A(std::cos(angle)), s = A(sign * std::sin(angle));
                for (int h = 0; h < heads; ++h) {
                    T* v = x + r * std::size_t(stride) + std::size_t(h) * std::size_t(D);
                    const A a = to_acc(v[j]), b = to_acc(v[j + half]);
                    v[j] = from_acc<T>(a * c - b * s);
                    v[j + half] = from_acc<T>(b * c + a * s);
                }
            }
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
