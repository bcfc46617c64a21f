// The CPU kernels of --reproducible's exact sums (model/kernels/fixed_point.h): a gradient into
// an int64 fixed-point accumulator, the sum back into the gradient's dtype, and a sum of squares
// in fixed point for the norm. Element-wise, or reductions that are exact (max, integer add):
// any thread count gives the same bits.
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cstddef>
#include <cstdint>

namespace shardlab::cpu {

// acc[i] += round(x[i] * 2^e); returns max |x[i]| (a NaN as +Inf). T: float, bf16_t, f16_t.
template <typename T>
float fixed_accumulate(std::int64_t* acc, const T* x, std::size_t n, int exponent);
// out[i] = acc[i] * 2^-e / divisor, rounded once to T (through fp32 for the 16-bit types).
template <typename T>
void fixed_to_float(T* out, const std::int64_t* acc, std::size_t n, int exponent, double divisor);
// sum over i of round(x[i]^2 * 2^e), as int64 (the caller's exponent keeps it below 2^62).
template <typename T>
std::int64_t fixed_squares(const T* x, std::size_t n, int exponent);

} // namespace shardlab::cpu
