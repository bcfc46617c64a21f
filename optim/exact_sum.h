// --reproducible (issue 23): sums that depend only on the global batch, not on the rank count, the
// stage, the layout or the micro-batch split. Each sequence's gradient is converted to int64
// fixed point (model/kernels/fixed_point.h) and the integers are summed — locally, then by the
// collectives — exactly, so every order gives the same sum. Why fixed point rather than a chain
// or a tree in global order: any collective, any stage and hybrid groups work unchanged, at 8
// bytes an element (docs/DECISIONS.md, "Bitwise at any rank count").
//
// The exponent of each unit (one per sharding unit, the same on every rank) is chosen before a
// step from the largest |gradient| of a sequence seen in the previous one, with 2^kHeadroomBits
// of room to grow; a value past it is an overflow that every rank sees in the step's maximum
// (all-gathered, exact), and the step is redone at the exponent that maximum calls for — the same
// decision at every N, since the maximum is the global batch's.
#pragma once

#include <cstdint>

namespace shardlab::exact {

constexpr int kHeadroomBits = 4;
// The loss of a sequence (a mean of token losses, below 2^20) in fixed point at 2^-32.
constexpr int kLossExponent = 32;

// Bits a value may use so that `terms` of them sum below 2^62: 62 - ceil(log2(terms)).
int value_bits(std::uint64_t terms);
// The exponent for a unit whose largest |value| is amax (> 0, finite): amax * 2^e stays below
// 2^(value_bits - kHeadroomBits).
int exponent_for(float amax, std::uint64_t terms);
// Whether a value of magnitude amax overflows exponent e (amax * 2^e > 2^value_bits).
bool overflows(float amax, int exponent, std::uint64_t terms);
// The exponent for the squares of a unit's summed gradient (numel elements, each at most
// amax + 2^-grad_exponent before rounding into its dtype): their fixed-point sum stays below 2^62.
int squares_exponent(float amax, int grad_exponent, std::uint64_t numel);

} // namespace shardlab::exact
