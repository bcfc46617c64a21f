// The collective tests' inputs: rank r's value at global element i, a pure function of (r, i,
// dtype), so every rank can compute what any other rank sent and the expected result.
#pragma once

#include "core/dtype.h"

#include <cstddef>
#include <cstdint>

namespace shardlab::testing_inputs {

inline std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Already representable in dtype t: integers in [-8, 8] (sums over up to 6 ranks are exact in
// every dtype) or uniform in (-1, 1).
inline double input(int r, std::size_t i, DType t, bool integers) {
    const std::uint64_t h = splitmix((std::uint64_t(r) << 40) ^ i ^ (std::uint64_t(t) << 60));
    const float v = integers ? float(int(h % 17) - 8) : float(double(h >> 11) * 0x1p-53 * 2 - 1);
    if (t == DType::f32) return v;
    std::uint16_t bits = 0;
    store_from_f32(&bits, t, 0, v);
    return load_as_f32(&bits, t, 0);
}

} // namespace shardlab::testing_inputs
