// half precision as cuda_fp16.h declares it, for the SIMT emulator (test infrastructure): the bits
// and CUDA's round-to-nearest-even conversions, through shardlab's own (core/dtype.h).
#pragma once

#include "core/dtype.h"

#include <cstdint>

struct __half {
    std::uint16_t __x;
};
inline float __half2float(__half h) {
    return shardlab::f16_to_f32(h.__x);
}
inline __half __float2half_rn(float f) {
    return {shardlab::f32_to_f16(f)};
}
inline __half __float2half(float f) {
    return __float2half_rn(f);
}
