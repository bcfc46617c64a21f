// How a buffer of `count` elements is cut into N contiguous chunks, one per rank: sizes differ by
// at most one, the first (count % N) chunks being the longer ones. Every collective uses this one
// rule, so "rank r's chunk" means the same thing everywhere (count < N gives empty chunks).
#pragma once

#include <algorithm>
#include <cstddef>

namespace shardlab {

struct Chunking {
    std::size_t count = 0;
    int n = 1;

    std::size_t size(int r) const { return count / n + (std::size_t(r) < count % n ? 1 : 0); }
    std::size_t offset(int r) const {
        return std::size_t(r) * (count / n) + std::min<std::size_t>(r, count % n);
    }
    std::size_t max_size() const { return size(0); }
};

// Ring neighbours and chunk indices, kept in one place so the algorithms read like the diagrams.
inline int ring_mod(int i, int n) {
    return ((i % n) + n) % n;
}

} // namespace shardlab
