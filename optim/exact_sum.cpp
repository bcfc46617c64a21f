// The exponent arithmetic of optim/exact_sum.h: powers of two compared exactly, no rounding.
#include "optim/exact_sum.h"

#include <algorithm>
#include <cmath>

namespace shardlab::exact {

namespace {
int ceil_log2(std::uint64_t n) {
    int k = 0;
    while (k < 63 && (std::uint64_t(1) << k) < n) ++k;
    return k;
}
// k with x < 2^k, x > 0 finite (frexp: x = m 2^k, m in [0.5, 1)).
int bits_above(double x) {
    int k = 0;
    std::frexp(x, &k);
    return k;
}
} // namespace

int value_bits(std::uint64_t terms) {
    return 62 - ceil_log2(std::max<std::uint64_t>(terms, 1));
}

int exponent_for(float amax, std::uint64_t terms) {
    return value_bits(terms) - kHeadroomBits - bits_above(amax);
}

bool overflows(float amax, int exponent, std::uint64_t terms) {
    return !(std::ldexp(double(amax), exponent) <= std::ldexp(1.0, value_bits(terms)));
}

int squares_exponent(float amax, int grad_exponent, std::uint64_t numel) {
    // |g| <= amax + 2^-e before rounding; rounding into fp32 or a 16-bit type adds at most one
    // part in 2^8: 2 (amax + 2^-e) bounds it with room to spare.
    const double bound = 2.0 * (double(amax) + std::ldexp(1.0, -grad_exponent));
    return 62 - ceil_log2(std::max<std::uint64_t>(numel, 1)) - 2 * bits_above(bound);
}

} // namespace shardlab::exact
