// Element-wise GELU; the derivative is written out by hand from the tanh form.
#include "model/kernels/cpu/gelu.h"

#include "model/kernels/cpu/vec_math.h"

#include <cmath>

namespace shardlab::cpu {

template <typename T>
void gelu_forward(T* out, const T* inp, std::size_t n) {
    using A = acc_t<T>;
    const A k = std::sqrt(A(2) / A(M_PI));
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
        const A x = to_acc(inp[i]);
        out[i] = from_acc<T>(A(0.5) * x * (A(1) + vtanh(k * (x + A(0.044715) * x * x * x))));
    }
}

template <typename T>
void gelu_backward(T* dinp, const T* inp, const T* dout, std::size_t n) {
    using A = acc_t<T>;
    const A k = std::sqrt(A(2) / A(M_PI));
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
        const A x = to_acc(inp[i]);
        const A u = k * (x + A(0.044715) * x * x * x);
        const A t = vtanh(u);
        const A sech2 = A(1) - t * t;
        const A grad =
            A(0.5) * (A(1) + t) + A(0.5) * x * sech2 * k * (A(1) + A(3 * 0.044715) * x * x);
        dinp[i] = from_acc<T>(grad * to_acc(dout[i]));
    }
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void gelu_forward<T>(T*, const T*, std::size_t);                                      \
    template void gelu_backward<T>(T*, const T*, const T*, std::size_t);
SHARDLAB_INSTANTIATE(float)
SHARDLAB_INSTANTIATE(double)
SHARDLAB_INSTANTIATE(bf16_t)
SHARDLAB_INSTANTIATE(f16_t)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
