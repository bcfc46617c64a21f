// Host loops over model/kernels/fixed_point.h's conversions.
#include "model/kernels/cpu/fixed_point.h"

#include "model/kernels/fixed_point.h"

#include <algorithm>

namespace shardlab::cpu {

template <typename T>
float fixed_accumulate(std::int64_t* acc, const T* x, std::size_t n, int exponent) {
    float amax = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const float v = to_acc(x[i]);
        amax = std::max(amax, fixed::magnitude(v));
        acc[i] += fixed::to_fixed(v, exponent);
    }
    return amax;
}

template <typename T>
void fixed_to_float(T* out, const std::int64_t* acc, std::size_t n, int exponent, double divisor) {
    for (std::size_t i = 0; i < n; ++i)
        out[i] = from_acc<T>(float(fixed::from_fixed(acc[i], exponent, divisor)));
}

template <typename T>
std::int64_t fixed_squares(const T* x, std::size_t n, int exponent) {
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double v = to_acc(x[i]); // its square is exact in double (24-bit significands)
        sum += fixed::to_fixed(v * v, exponent);
    }
    return sum;
}

#define SHARDLAB_FIXED(T)                                                                          \
    template float fixed_accumulate<T>(std::int64_t*, const T*, std::size_t, int);                 \
    template void fixed_to_float<T>(T*, const std::int64_t*, std::size_t, int, double);            \
    template std::int64_t fixed_squares<T>(const T*, std::size_t, int);
SHARDLAB_FIXED(float)
SHARDLAB_FIXED(bf16_t)
SHARDLAB_FIXED(f16_t)
#undef SHARDLAB_FIXED

} // namespace shardlab::cpu
