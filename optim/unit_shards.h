// How the ZeRO engine cuts and holds units — the policy the plan predicts from (plan/ calls these;
// the engine implements what they describe).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardlab {

// A unit is padded to a multiple of N elements and cut into N equal contiguous shards.
inline std::uint64_t padded_numel(std::size_t numel, int ranks) {
    return (std::uint64_t(numel) + ranks - 1) / ranks * ranks;
}

// Stages 2-3 hold a unit's full gradient from its first use in backward until the *next* unit's
// backward is done: its reduce-scatter runs on the comm stream while the next unit's backward
// computes, and if it were released at once, the next unit's gradient would get the same memory
// and wait for that reduce-scatter. Given the units' full gradient bytes in the order backward
// first uses them, and the bytes held throughout backward (a tied head's embeddings), the most live
// at once: two consecutive units plus what is held.
inline std::uint64_t full_gradient_peak(const std::vector<std::uint64_t>& backward_order,
                                        std::uint64_t held_throughout) {
    std::uint64_t peak = held_throughout, retiring = 0;
    for (std::uint64_t bytes : backward_order) {
        peak = std::max(peak, held_throughout + retiring + bytes);
        retiring = bytes;
    }
    return peak;
}

} // namespace shardlab
