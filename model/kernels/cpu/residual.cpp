// One loop compiled for the CPU's vector ISA (parallel.h), on each thread's range or on the
// caller's thread; out may alias a (and dst src): element i is read before it is written.
#include "model/kernels/cpu/residual.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/parallel.h"

namespace shardlab::cpu {

template <typename T>
SHARDLAB_TARGET_CLONES void add_values(T* out, const T* a, const T* b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = from_acc<T>(to_acc(a[i]) + to_acc(b[i]));
}

template <typename T>
void residual_forward(T* out, const T* a, const T* b, std::size_t n) {
    parallel_ranges(
        n, [&](std::size_t lo, std::size_t hi) { add_values(out + lo, a + lo, b + lo, hi - lo); });
}

template <typename T>
void accumulate(T* dst, const T* src, std::size_t n) {
    parallel_ranges(n, [&](std::size_t lo, std::size_t hi) {
        add_values(dst + lo, dst + lo, src + lo, hi - lo);
    });
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void add_values<T>(T*, const T*, const T*, std::size_t);                              \
    template void residual_forward<T>(T*, const T*, const T*, std::size_t);                        \
    template void accumulate<T>(T*, const T*, std::size_t);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
