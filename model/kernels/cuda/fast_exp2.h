// 2^x by the special-function unit's ex2.approx.ftz (PTX): one instruction where expf takes about
// eleven (a range reduction and an exact scaling around the same ex2, counted in its PTX). PTX
// gives its error as at most 2 ulp (relative 2^-22) over the full range; results below 2^-126
// flush to zero. The flash kernels call it on scores scaled by log2(e), the softmax's exponent in
// one fma. The emulator computes std::exp2 (within that bound) and flushes the same way.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace shardlab::cuda {

constexpr float kLog2e = 1.4426950408889634f; // 1 / ln 2: e^x = 2^(x log2 e)
constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ float fast_exp2(float x) {
#ifdef SHARDLAB_CUDA_EMU
    const float y = std::exp2(x);
    return y < 0x1p-126f ? 0.0f : y;
#else
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#endif
}

} // namespace shardlab::cuda
