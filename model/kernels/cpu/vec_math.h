// exp and tanh the compiler can vectorize (the C library's are calls it cannot): Cephes' expf —
// range reduction to r in [-ln2/2, ln2/2] and a degree-6 polynomial, within 2 ulp for fp32 —
// and tanh from it. double keeps the C library's, for the float64 finite-difference checks.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace shardlab::cpu {

inline float vexp(float x) {
    x = std::min(std::max(x, -87.3f), 88.0f); // 2^n stays a normal float
    const float t = x * 1.44269504088896341f;
    const float n = (t + 12582912.0f) - 12582912.0f; // round to nearest (1.5 * 2^23 trick)
    float r = x - n * 0.693359375f;                  // ln2 split in two for an exact product
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    return p * std::bit_cast<float>((std::int32_t(n) + 127) << 23);
}
inline double vexp(double x) {
    return std::exp(x);
}

// tanh(u) = 1 - 2 / (exp(2u) + 1): exact limits +-1, absolute error ~1e-7 near 0.
inline float vtanh(float u) {
    return 1.0f - 2.0f / (vexp(2.0f * u) + 1.0f);
}
inline double vtanh(double u) {
    return std::tanh(u);
}

} // namespace shardlab::cpu
