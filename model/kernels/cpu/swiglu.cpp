// Element-wise, each thread's range a chunk at a time in loops compiled for the CPU's vector ISA
// (parallel.h).
#include "model/kernels/cpu/swiglu.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/chunks.h"
#include "model/kernels/cpu/parallel.h"
#include "model/kernels/cpu/vec_math.h"

#include <cstddef>

namespace shardlab::cpu {

namespace {
// e[i] = exp(-gate[i]) for n <= kChunk values.
template <typename T>
SHARDLAB_TARGET_CLONES void neg_exp(acc_t<T>* __restrict e, const T* __restrict gate,
                                    std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) e[i] = vexp(-to_acc(gate[i]));
}

template <typename T>
SHARDLAB_TARGET_CLONES void swiglu_forward_chunk(T* __restrict out, const T* __restrict gate,
                                                 const T* __restrict up,
                                                 const acc_t<T>* __restrict e, std::size_t n) {
    using A = acc_t<T>;
    for (std::size_t i = 0; i < n; ++i) {
        const A g = to_acc(gate[i]);
        const A sig = A(1) / (A(1) + e[i]);
        out[i] = from_acc<T>(g * sig * to_acc(up[i]));
    }
}

template <typename T>
SHARDLAB_TARGET_CLONES void swiglu_backward_chunk(T* __restrict dgate, T* __restrict dup,
                                                  const T* __restrict dout,
                                                  const T* __restrict gate, const T* __restrict up,
                                                  const acc_t<T>* __restrict e, std::size_t n) {
    using A = acc_t<T>;
    for (std::size_t i = 0; i < n; ++i) {
        const A g = to_acc(gate[i]), u = to_acc(up[i]), dy = to_acc(dout[i]);
        const A sig = A(1) / (A(1) + e[i]);
        dgate[i] = from_acc<T>(dy * u * sig * (A(1) + g * (A(1) - sig)));
        dup[i] = from_acc<T>(dy * g * sig);
    }
}

} // namespace

template <typename T>
void swiglu_forward(T* out, const T* gate, const T* up, std::size_t n) {
    parallel_ranges(n, [&](std::size_t lo, std::size_t hi) {
        in_chunks<acc_t<T>>(
            lo, hi, [&](acc_t<T>* e, std::size_t i, std::size_t m) { neg_exp(e, gate + i, m); },
            [&](std::size_t i, std::size_t m, const acc_t<T>* e) {
                swiglu_forward_chunk(out + i, gate + i, up + i, e, m);
            });
    });
}

template <typename T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, std::size_t n) {
    parallel_ranges(n, [&](std::size_t lo, std::size_t hi) {
        in_chunks<acc_t<T>>(
            lo, hi, [&](acc_t<T>* e, std::size_t i, std::size_t m) { neg_exp(e, gate + i, m); },
            [&](std::size_t i, std::size_t m, const acc_t<T>* e) {
                swiglu_backward_chunk(dgate + i, dup + i, dout + i, gate + i, up + i, e, m);
            });
    });
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void swiglu_forward<T>(T*, const T*, const T*, std::size_t);                          \
    template void swiglu_backward<T>(T*, T*, const T*, const T*, const T*, std::size_t);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
