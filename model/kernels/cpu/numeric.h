// Storage types the CPU kernels are written for, and how each is computed in: fp32, bf16 and
// fp16 are stored as such and computed in fp32 (loaded, worked on, rounded once when stored);
// double is stored and computed in double, for the float64 finite-difference checks.
#pragma once

#include "core/dtype.h"

#include <cstdint>
#include <type_traits>

namespace shardlab {

struct bf16_t {
    std::uint16_t bits;
};
struct f16_t {
    std::uint16_t bits;
};

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

inline float to_acc(float x) {
    return x;
}
inline double to_acc(double x) {
    return x;
}
inline float to_acc(bf16_t x) {
    return bf16_to_f32(x.bits);
}
inline float to_acc(f16_t x) {
    return f16_to_f32(x.bits);
}

template <typename T>
inline T from_acc(acc_t<T> x) {
    if constexpr (std::is_same_v<T, bf16_t>)
        return bf16_t{f32_to_bf16(x)};
    else if constexpr (std::is_same_v<T, f16_t>)
        return f16_t{f32_to_f16(x)};
    else
        return x;
}

// Instantiates a kernel file's templates for every storage type: M(float) M(double) ...
#define SHARDLAB_FOR_EACH_STORAGE_TYPE(M) M(float) M(double) M(bf16_t) M(f16_t)

template <typename T>
constexpr DType dtype_of() {
    if constexpr (std::is_same_v<T, bf16_t>)
        return DType::bf16;
    else if constexpr (std::is_same_v<T, f16_t>)
        return DType::f16;
    else
        return DType::f32; // double has no DType: it lives only inside tests
}

} // namespace shardlab
