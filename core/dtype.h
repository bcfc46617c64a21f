// Element types and the 16-bit float conversions. bf16 and fp16 are stored as raw uint16_t
// bit patterns; conversion from fp32 rounds to nearest, ties to even, keeps NaN a (quiet) NaN,
// overflows to +-Inf and produces subnormals where the format has them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace shardlab {

// i64 is not a model dtype: it carries --reproducible's exact fixed-point gradient sums
// (optim/exact_sum.h) through the collectives, whose reduction adds it as an integer.
enum class DType { f32, bf16, f16, i64 };

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);            // "fp32", "bf16", "fp16", "int64"
DType parse_dtype(const std::string& name); // throws Error naming the accepted names

inline std::uint32_t f32_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float f32_from_bits(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// bf16 is the top half of an fp32: widening is a shift.
inline float bf16_to_f32(std::uint16_t h) {
    return f32_from_bits(std::uint32_t(h) << 16);
}

inline std::uint16_t f32_to_bf16(float f) {
    std::uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x0040u); // quiet NaN
    // Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate. A carry out of
    // the mantissa correctly bumps the exponent, up to Inf.
    u += 0x7fffu + ((u >> 16) & 1u);
    return std::uint16_t(u >> 16);
}

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);

// Element-wise conversion of n values between any two dtypes (same type: a copy, which may
// overlap; otherwise src and dst must not). Long conversions are split over the OpenMP team.
void convert(const void* src, DType src_type, void* dst, DType dst_type, std::size_t n);

// Reads / writes element i of a buffer as fp32.
float load_as_f32(const void* p, DType t, std::size_t i);
void store_from_f32(void* p, DType t, std::size_t i, float v);

} // namespace shardlab
