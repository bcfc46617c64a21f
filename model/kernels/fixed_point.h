// The fixed-point numbers --reproducible sums gradients in (optim/exact_sum.h says why): a value x
// at exponent e is the int64 round(x * 2^e), rounded to nearest, ties to even, computed in double
// (x * 2^e is exact there: x is at most fp32, the scaling a power of two). Integer sums are exact,
// so they do not depend on the order of the additions, the rank count or the split of a batch.
// Shared by the CPU kernels and the CUDA ones (host and device).
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define SHARDLAB_HD __host__ __device__
#else
#define SHARDLAB_HD
#endif

namespace shardlab::fixed {

// The largest magnitude a converted value may take. The exponent policy keeps every value at or
// below 2^62 / G for a sum of G values, so sums never reach it; a value beyond it (a gradient
// that outgrew its exponent) saturates here, the step's maximum shows the overflow, and the
// engine redoes the step at a smaller exponent. Saturation only avoids an undefined conversion.
constexpr double kLimit = 4611686018427387904.0; // 2^62

// round(x * 2^e), saturated to +-2^62; a NaN converts to 0 (the step's maximum reports it).
SHARDLAB_HD inline std::int64_t to_fixed(double x, int exponent) {
    const double scaled = std::nearbyint(std::ldexp(x, exponent));
    if (!(scaled == scaled)) return 0;
    if (scaled >= kLimit) return std::int64_t(1) << 62;
    if (scaled <= -kLimit) return -(std::int64_t(1) << 62);
    return std::int64_t(scaled);
}

// The value of a fixed-point sum over `divisor` terms: q * 2^-e / divisor, in double.
SHARDLAB_HD inline double from_fixed(std::int64_t q, int exponent, double divisor) {
    return std::ldexp(double(q), -exponent) / divisor;
}

// |x| for the step's maximum, with a NaN as +Inf: max() then propagates it whatever the order.
SHARDLAB_HD inline float magnitude(float x) {
    return x == x ? std::fabs(x) : INFINITY;
}

} // namespace shardlab::fixed
