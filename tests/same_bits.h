// Bitwise equality of per-unit fp32 values (weights, master copies): the tests' check of the
// "same bits" promises, with no tolerance.
#pragma once

#include <cstring>
#include <vector>

namespace shardlab {

inline bool same_bits(const std::vector<std::vector<float>>& a,
                      const std::vector<std::vector<float>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t u = 0; u < a.size(); ++u)
        if (a[u].size() != b[u].size() ||
            std::memcmp(a[u].data(), b[u].data(), a[u].size() * sizeof(float)) != 0)
            return false;
    return true;
}

} // namespace shardlab
