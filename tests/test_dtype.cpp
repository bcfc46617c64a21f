// dtypes: every one of the 65,536 bf16 and fp16 bit patterns, both directions, against
// references written independently of core/dtype.cpp — the value decoded from the format's
// fields in double precision, and GCC's own _Float16 conversions.
#include "core/dtype.h"
#include "core/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

using namespace shardlab;

namespace {
// Decodes a 16-bit float with `man_bits` mantissa bits and `exp_bits` exponent bits from its
// fields: the definition of the format, evaluated in double.
double decode(std::uint16_t h, int exp_bits, int man_bits) {
    const int bias = (1 << (exp_bits - 1)) - 1;
    const int e = (h >> man_bits) & ((1 << exp_bits) - 1);
    const int m = h & ((1 << man_bits) - 1);
    const double sign = (h >> 15) ? -1.0 : 1.0;
    if (e == (1 << exp_bits) - 1) return m ? NAN : sign * INFINITY;
    if (e == 0) return sign * std::ldexp(double(m), 1 - bias - man_bits);
    return sign * std::ldexp(double((1 << man_bits) + m), e - bias - man_bits);
}
double decode_bf16(std::uint16_t h) {
    return decode(h, 8, 7);
}
double decode_f16(std::uint16_t h) {
    return decode(h, 5, 10);
}

bool is_nan16(std::uint16_t h, int man_bits) {
    return ((h & 0x7fffu) >> man_bits) == (0x7fffu >> man_bits) && (h & ((1u << man_bits) - 1));
}

float next_up(float x) {
    return std::nextafter(x, INFINITY);
}
float next_down(float x) {
    return std::nextafter(x, -INFINITY);
}

// For each finite non-negative pattern p below the largest: the midpoint between p and p+1 must
// round to whichever has an even mantissa, and anything just beside it to the nearer one.
template <typename ToF32, typename FromF32>
void check_rounding_between_neighbours(ToF32 to_f32, FromF32 from_f32, std::uint16_t max_finite) {
    for (std::uint32_t p = 0; p < max_finite; ++p) {
        const double lo = double(to_f32(std::uint16_t(p))),
                     hi = double(to_f32(std::uint16_t(p + 1)));
        const float mid = float((lo + hi) / 2); // exact: 16-bit midpoints fit in fp32
        ASSERT_EQ(double(mid), (lo + hi) / 2);
        const std::uint16_t even = (p % 2 == 0) ? std::uint16_t(p) : std::uint16_t(p + 1);
        ASSERT_EQ(from_f32(mid), even) << "tie at pattern " << p;
        ASSERT_EQ(from_f32(next_down(mid)), p) << "below midpoint at " << p;
        ASSERT_EQ(from_f32(next_up(mid)), p + 1) << "above midpoint at " << p;
        // Negative side: the sign bit is independent of rounding.
        ASSERT_EQ(from_f32(-mid), std::uint16_t(even | 0x8000u));
    }
}
} // namespace

TEST(DType, Bf16ToF32AllPatterns) {
    for (std::uint32_t p = 0; p < 65536; ++p) {
        const float f = bf16_to_f32(std::uint16_t(p));
        const double ref = decode_bf16(std::uint16_t(p));
        if (std::isnan(ref)) {
            EXPECT_TRUE(std::isnan(f)) << p;
        } else {
            EXPECT_EQ(double(f), ref) << p;
            EXPECT_EQ(std::signbit(f), bool(p & 0x8000u)) << p; // -0 stays -0
        }
    }
}

TEST(DType, F16ToF32AllPatterns) {
    for (std::uint32_t p = 0; p < 65536; ++p) {
        const std::uint16_t h = std::uint16_t(p);
        const float f = f16_to_f32(h);
        const double ref = decode_f16(h);
        _Float16 gcc;
        std::memcpy(&gcc, &h, 2);
        if (std::isnan(ref)) {
            EXPECT_TRUE(std::isnan(f)) << p;
        } else {
            EXPECT_EQ(double(f), ref) << p;
            EXPECT_EQ(f, float(gcc)) << p;
            EXPECT_EQ(std::signbit(f), bool(p & 0x8000u)) << p;
        }
    }
}

TEST(DType, RoundTripEveryPattern) {
    for (std::uint32_t p = 0; p < 65536; ++p) {
        const std::uint16_t h = std::uint16_t(p);
        if (is_nan16(h, 7)) {
            EXPECT_TRUE(is_nan16(f32_to_bf16(bf16_to_f32(h)), 7)) << p;
        } else {
            EXPECT_EQ(f32_to_bf16(bf16_to_f32(h)), h) << p;
        }
        if (is_nan16(h, 10)) {
            EXPECT_TRUE(is_nan16(f32_to_f16(f16_to_f32(h)), 10)) << p;
        } else {
            EXPECT_EQ(f32_to_f16(f16_to_f32(h)), h) << p;
        }
    }
}

TEST(DType, Bf16RoundsToNearestEvenBetweenAllNeighbours) {
    check_rounding_between_neighbours(bf16_to_f32, f32_to_bf16, 0x7f7f); // 0x7f7f: largest finite
}

TEST(DType, F16RoundsToNearestEvenBetweenAllNeighbours) {
    check_rounding_between_neighbours(f16_to_f32, f32_to_f16, 0x7bff); // 65504
}

TEST(DType, OverflowGoesToInfinityAtTheRoundingBoundary) {
    // fp16: 65504 is the largest finite; the midpoint to the next binade (65520) ties to Inf.
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
    EXPECT_EQ(f32_to_f16(next_down(65520.0f)), 0x7bff);
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
    EXPECT_EQ(f32_to_f16(-1e10f), 0xfc00);
    EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
    // bf16: the largest finite is (2 - 2^-7) * 2^127; halfway above it rounds to Inf.
    const float bf_max = bf16_to_f32(0x7f7f);
    EXPECT_EQ(f32_to_bf16(bf_max), 0x7f7f);
    EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
    EXPECT_EQ(f32_to_bf16(-INFINITY), 0xff80);
}

TEST(DType, NaNStaysNaNAndZeroKeepsItsSign) {
    const float nans[] = {NAN, -NAN, f32_from_bits(0x7f800001u), f32_from_bits(0xff800001u),
                          f32_from_bits(0x7fc00000u)};
    for (float n : nans) {
        EXPECT_TRUE(is_nan16(f32_to_bf16(n), 7));
        EXPECT_TRUE(is_nan16(f32_to_f16(n), 10));
    }
    // A signalling NaN whose payload sits only in the low bits must not truncate to Inf.
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f32_from_bits(0x7f800001u)))));
    EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
    EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
}

TEST(DType, Fp32SubnormalsAndTinyValues) {
    // Below half the smallest fp16 subnormal (2^-25) everything flushes to zero; at it, ties to 0.
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
    EXPECT_EQ(f32_to_f16(next_up(std::ldexp(1.0f, -25))), 0x0001);
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
    // fp32 subnormals are representable-ish in bf16 (same exponent range): round to nearest.
    EXPECT_EQ(f32_to_bf16(f32_from_bits(0x00000001u)), 0x0000);
    EXPECT_EQ(f32_to_bf16(f32_from_bits(0x00008000u)), 0x0000); // tie -> even (0)
    EXPECT_EQ(f32_to_bf16(f32_from_bits(0x00018000u)), 0x0002); // tie -> even (2)
    EXPECT_EQ(f32_to_bf16(f32_from_bits(0x00010000u)), 0x0001);
}

TEST(DType, RandomFloatsMatchGccF16AndDoubleReferenceBf16) {
    std::mt19937 rng(1234);
    for (int i = 0; i < 2'000'000; ++i) {
        const float f = f32_from_bits(rng());
        if (std::isnan(f)) continue;
        const std::uint16_t ours = f32_to_f16(f);
        const _Float16 gcc = _Float16(f);
        std::uint16_t ref;
        std::memcpy(&ref, &gcc, 2);
        ASSERT_EQ(ours, ref) << std::hexfloat << f;
        // bf16 reference: pick the nearer of the two truncation neighbours in double, ties even.
        const std::uint32_t u = f32_bits(f);
        const std::uint16_t down = std::uint16_t(u >> 16), up = std::uint16_t(down + 1);
        const double dd = std::fabs(double(f) - decode_bf16(down));
        // Rounding up past the largest finite gives Inf, which IEEE places at 2^128 for this.
        const double up_value =
            (up & 0x7fffu) == 0x7f80u ? std::copysign(0x1p128, double(f)) : decode_bf16(up);
        const double du = std::fabs(up_value - double(f));
        std::uint16_t expect = dd < du ? down : du < dd ? up : (down % 2 == 0 ? down : up);
        if ((u & 0xffffu) == 0) expect = down;
        ASSERT_EQ(f32_to_bf16(f), expect) << std::hexfloat << f;
    }
}

TEST(DType, ConvertBuffersAndNames) {
    const float src[4] = {1.0f, -2.5f, 0.1f, 65504.0f};
    std::uint16_t b[4], h[4];
    float back[4];
    convert(src, DType::f32, b, DType::bf16, 4);
    convert(src, DType::f32, h, DType::f16, 4);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(b[i], f32_to_bf16(src[i]));
        EXPECT_EQ(h[i], f32_to_f16(src[i]));
    }
    convert(h, DType::f16, back, DType::f32, 4);
    EXPECT_EQ(back[0], 1.0f);
    EXPECT_EQ(back[3], 65504.0f);
    EXPECT_EQ(dtype_size(DType::bf16), 2u);
    EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
    EXPECT_THROW(parse_dtype("fp8"), Error);
}
