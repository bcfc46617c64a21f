// Element-wise, each thread's range in a loop compiled for the CPU's vector ISA (parallel.h).
#include "model/kernels/cpu/swiglu.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/parallel.h"
#include "model/kernels/cpu/vec_math.h"

namespace shardlab::cpu {

namespace {
template <typename T>
SHARDLAB_TARGET_CLONES void swiglu_forward_range(T* __restrict out, const T* __restrict gate,
                                                 const T* __restrict up, std::size_t n) {
    using A = acc_t<T>;
    for (std::size_t i = 0; i < n; ++i) {
        const A g = to_acc(gate[i]);
        const A sig = A(1) / (A(1) + vexp(-g));
        out[i] = from_acc<T>(g * sig * to_acc(up[i]));
    }
}

template <typename T>
SHARDLAB_TARGET_CLONES void
swiglu_backward_range(T* __restrict dgate, T* __restrict dup, const T* __restrict dout,
                      const T* __restrict gate, const T* __restrict up, std::size_t n) {
    using A = acc_t<T>;
    for (std::size_t i = 0; i < n; ++i) {
        const A g = to_acc(gate[i]), u = to_acc(up[i]), dy = to_acc(dout[i]);
        const A sig = A(1) / (A(1) + vexp(-g));
        dgate[i] = from_acc<T>(dy * u * sig * (A(1) + g * (A(1) - sig)));
        dup[i] = from_acc<T>(dy * g * sig);
    }
}
} // namespace

template <typename T>
void swiglu_forward(T* out, const T* gate, const T* up, std::size_t n) {
    parallel_ranges(n, [&](std::size_t lo, std::size_t hi) {
        swiglu_forward_range(out + lo, gate + lo, up + lo, hi - lo);
    });
}

template <typename T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, std::size_t n) {
    parallel_ranges(n, [&](std::size_t lo, std::size_t hi) {
        swiglu_backward_range(dgate + lo, dup + lo, dout + lo, gate + lo, up + lo, hi - lo);
    });
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void swiglu_forward<T>(T*, const T*, const T*, std::size_t);                          \
    template void swiglu_backward<T>(T*, T*, const T*, const T*, const T*, std::size_t);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
