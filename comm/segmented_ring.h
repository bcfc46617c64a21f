// Ring reduce-scatter and all-gather over segments of any sizes (MPI's "v" variants): the building
// blocks of the hierarchical collectives, whose per-rank pieces are not Chunking's even split. The
// same schedule as the plain ring (comm/ring_*.cpp), which stays the teaching version; these take
// the divisor to apply at the last reduction, since a step of a larger collective divides by the
// whole N, not by its own group's size.
#pragma once

#include "comm/collective_context.h"

#include <cstddef>
#include <vector>

namespace shardlab {

// Segment j of a buffer: sizes[j] elements at the sum of the sizes before it.
struct Segments {
    std::vector<std::size_t> sizes;
    std::size_t offset(int j) const;
    std::size_t size(int j) const { return sizes[std::size_t(j)]; }
    std::size_t total() const { return offset(int(sizes.size())); }
    std::size_t max_size() const;
};

namespace algo {

// send: the whole buffer (sizes.size() == c.size() segments); recv: segment(rank), summed over
// the ranks and divided by `divisor` once, at the end. In place when recv == send + offset(rank).
void ring_reduce_scatter_v(CollectiveContext& c, const void* send, void* recv, const Segments& seg,
                           DType t, float divisor);
// send: segment(rank); recv: the whole buffer. In place when send == recv + offset(rank).
void ring_all_gather_v(CollectiveContext& c, const void* send, void* recv, const Segments& seg,
                       DType t);

} // namespace algo
} // namespace shardlab
