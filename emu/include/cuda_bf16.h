// bfloat16 as cuda_bf16.h declares it, for the SIMT emulator (test infrastructure): the bits of
// the value and CUDA's conversions — round to nearest even, NaN kept a NaN — through shardlab's
// own (core/dtype.h), which are exhaustively tested.
#pragma once

#include "core/dtype.h"

#include <cstdint>

struct __nv_bfloat16 {
    std::uint16_t __x;
};
inline float __bfloat162float(__nv_bfloat16 h) {
    return shardlab::bf16_to_f32(h.__x);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    return {shardlab::f32_to_bf16(f)};
}
inline __nv_bfloat16 __float2bfloat16(float f) {
    return __float2bfloat16_rn(f);
}
