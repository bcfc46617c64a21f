// Element-wise GELU; the derivative is written out by hand from the tanh form. Each thread's range
// runs a chunk at a time in loops compiled for the CPU's vector ISA (parallel.h).
#include "model/kernels/cpu/gelu.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/chunks.h"
#include "model/kernels/cpu/parallel.h"
#include "model/kernels/cpu/vec_math.h"

#include <cmath>
#include <cstddef>

namespace shardlab::cpu {

namespace {
// t[i] = tanh(sqrt(2 / pi) (x + 0.044715 x^3)) for n <= kChunk values.
template <typename T>
SHARDLAB_TARGET_CLONES void tanh_args(acc_t<T>* __restrict t, const T* __restrict inp,
                                      std::size_t n) {
    using A = acc_t<T>;
    const A k = std::sqrt(A(2) / A(M_PI));
    for (std::size_t i = 0; i < n; ++i) {
        const A x = to_acc(inp[i]);
        t[i] = vtanh(k * (x + A(0.044715) * x * x * x));
    }
}

template <typename T>
SHARDLAB_TARGET_CLONES void gelu_forward_chunk(T* __restrict out, const T* __restrict inp,
                                               const acc_t<T>* __restrict t, std::size_t n) {
    using A = acc_t<T>;
    for (std::size_t i = 0; i < n; ++i) {
        const A x = to_acc(inp[i]);
        out[i] = from_acc<T>(A(0.5) * x * (A(1) + t[i]));
    }
}

// dinp may be dout (Ops::linear_gelu_backward runs it in place): element i is read before it is
// written, and neither pointer is __restrict.
template <typename T>
SHARDLAB_TARGET_CLONES void gelu_backward_chunk(T* dinp, const T* __restrict inp, const T* dout,
                                                const acc_t<T>* __restrict t, std::size_t n) {
    using A = acc_t<T>;
    const A k = std::sqrt(A(2) / A(M_PI));
    for (std::size_t i = 0; i < n; ++i) {
        const A x = to_acc(inp[i]);
        const A sech2 = A(1) - t[i] * t[i];
        const A grad =
            A(0.5) * (A(1) + t[i]) + A(0.5) * x * sech2 * k * (A(1) + A(3 * 0.044715) * x * x);
        dinp[i] = from_acc<T>(grad * to_acc(dout[i]));
    }
}

} // namespace

template <typename T>
void gelu_forward(T* out, const T* inp, std::size_t n) {
    parallel_ranges(n, [&](std::size_t lo, std::size_t hi) {
        in_chunks<acc_t<T>>(
            lo, hi, [&](acc_t<T>* t, std::size_t i, std::size_t m) { tanh_args(t, inp + i, m); },
            [&](std::size_t i, std::size_t m, const acc_t<T>* t) {
                gelu_forward_chunk(out + i, inp + i, t, m);
            });
    });
}

template <typename T>
void gelu_backward(T* dinp, const T* inp, const T* dout, std::size_t n) {
    parallel_ranges(n, [&](std::size_t lo, std::size_t hi) {
        in_chunks<acc_t<T>>(
            lo, hi, [&](acc_t<T>* t, std::size_t i, std::size_t m) { tanh_args(t, inp + i, m); },
            [&](std::size_t i, std::size_t m, const acc_t<T>* t) {
                gelu_backward_chunk(dinp + i, inp + i, dout + i, t, m);
            });
    });
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void gelu_forward<T>(T*, const T*, std::size_t);                                      \
    template void gelu_backward<T>(T*, const T*, const T*, std::size_t);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
