// fp16 <-> fp32 conversion by bit manipulation (bf16 is inline in dtype.h), and convert(): a loop
// per pair of types, compiled per ISA and split over the OpenMP team when long.
#include "core/dtype.h"

#include "core/error.h"
#include "core/parallel_ranges.h" // one thread in the fuzzing build, which links no OpenMP
#include "core/target_clones.h"

#include <cmath>

namespace shardlab {

std::size_t dtype_size(DType t) {
    return t == DType::i64 ? 8 : t == DType::f32 ? 4 : 2;
}

const char* dtype_name(DType t) {
    switch (t) {
    case DType::f32:
        return "fp32";
    case DType::bf16:
        return "bf16";
    case DType::f16:
        return "fp16";
    case DType::i64:
        return "int64";
    }
    return "?";
}

DType parse_dtype(const std::string& name) {
    if (name == "fp32" || name == "f32" || name == "float32") return DType::f32;
    if (name == "bf16" || name == "bfloat16") return DType::bf16;
    if (name == "fp16" || name == "f16" || name == "float16") return DType::f16;
    throw UsageError("unknown dtype '" + name + "'; use one of fp32, bf16, fp16");
}

float f16_to_f32(std::uint16_t h) {
    std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13)); // Inf / NaN
    if (exp != 0) return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
    if (man == 0) return f32_from_bits(sign); // +-0
    // Subnormal fp16: value = man * 2^-24, exactly representable as a normal fp32.
    float v = float(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
}

std::uint16_t f32_to_f16(float f) {
    std::uint32_t u = f32_bits(f);
    std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
    std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return std::uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); // quiet NaN
    if (a >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u); // rounds to >= 65520: Inf
    if (a >= 0x38800000u) {                                     // normal fp16 range (>= 2^-14)
        std::uint32_t r = a - 0x38000000u;                      // rebias exponent 127 -> 15
        r += 0xfffu + ((r >> 13) & 1u); // round to nearest even on the 13 dropped bits
        return std::uint16_t(sign | (r >> 13));
    }
    if (a < 0x33000000u) return sign; // below half the smallest subnormal (2^-25): +-0
    // Subnormal result: shift the full 24-bit significand right, rounding to nearest even.
    std::uint32_t exp = a >> 23;
    std::uint32_t man = (a & 0x7fffffu) | 0x800000u;
    std::uint32_t shift = 126 - exp; // 14..24 for exp 102..112
    std::uint32_t kept = man >> shift;
    std::uint32_t rem = man & ((1u << shift) - 1);
    std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (kept & 1u))) ++kept;
    return std::uint16_t(sign | kept);
}

float load_as_f32(const void* p, DType t, std::size_t i) {
    switch (t) {
    case DType::f32:
        return static_cast<const float*>(p)[i];
    case DType::bf16:
        return bf16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
    case DType::f16:
        return f16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
    case DType::i64:
        return float(static_cast<const std::int64_t*>(p)[i]);
    }
    return 0.0f;
}

void store_from_f32(void* p, DType t, std::size_t i, float v) {
    switch (t) {
    case DType::f32:
        static_cast<float*>(p)[i] = v;
        return;
    case DType::bf16:
        static_cast<std::uint16_t*>(p)[i] = f32_to_bf16(v);
        return;
    case DType::f16:
        static_cast<std::uint16_t*>(p)[i] = f32_to_f16(v);
        return;
    case DType::i64:
        static_cast<std::int64_t*>(p)[i] = std::int64_t(std::nearbyint(v));
        return;
    }
}

namespace {
// dst[i] = to(src[i]) for one pair of types: a loop the compiler vectorises (bf16 <-> fp32).
template <typename S, typename D, typename To>
SHARDLAB_TARGET_CLONES void convert_range(const S* __restrict src, D* __restrict dst, std::size_t n,
                                          To to) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = to(src[i]);
}

template <typename S, typename D, typename To>
void convert_typed(const void* src, void* dst, std::size_t n, To to) {
    const auto* s = static_cast<const S*>(src);
    auto* d = static_cast<D*>(dst);
    // Each element converts alone, so any split over threads gives the same bits. Below this
    // many elements a team costs more than it saves; inside one (AdamW's tiles) the calling thread
    // converts its own share.
    constexpr std::size_t kParallelFrom = std::size_t(1) << 16;
    if (n >= kParallelFrom && !in_parallel_team())
        return parallel_ranges(
            n, [&](std::size_t lo, std::size_t hi) { convert_range(s + lo, d + lo, hi - lo, to); });
    convert_range(s, d, n, to);
}
} // namespace

void convert(const void* src, DType src_type, void* dst, DType dst_type, std::size_t n) {
    if (n == 0) return; // empty tensors have null data, and memmove(nullptr, ..., 0) is undefined
    if (src_type == dst_type) {
        std::memmove(dst, src, n * dtype_size(src_type));
        return;
    }
    using u16 = std::uint16_t;
    if (src_type == DType::f32 && dst_type == DType::bf16)
        return convert_typed<float, u16>(src, dst, n, [](float v) { return f32_to_bf16(v); });
    if (src_type == DType::bf16 && dst_type == DType::f32)
        return convert_typed<u16, float>(src, dst, n, [](u16 h) { return bf16_to_f32(h); });
    if (src_type == DType::f32 && dst_type == DType::f16)
        return convert_typed<float, u16>(src, dst, n, [](float v) { return f32_to_f16(v); });
    if (src_type == DType::f16 && dst_type == DType::f32)
        return convert_typed<u16, float>(src, dst, n, [](u16 h) { return f16_to_f32(h); });
    for (std::size_t i = 0; i < n; ++i) // the rest (int64, bf16 <-> fp16): not on a step's path
        store_from_f32(dst, dst_type, i, load_as_f32(src, src_type, i));
}

} // namespace shardlab
