// Ring AllReduce = ring ReduceScatter + ring AllGather: each rank reduces its own chunk straight
// into its place in the output, then the chunks are gathered in place. Every rank ends with the
// same bits, because each chunk was reduced once, on one rank, and then copied.
#include "comm/algorithms.h"
#include "comm/chunking.h"

namespace shardlab::algo {

void ring_all_reduce(CollectiveContext& c, const void* send, void* recv, std::size_t count, DType t,
                     ReduceOp op) {
    const Chunking ch{count, c.size()};
    char* own_chunk = static_cast<char*>(recv) + ch.offset(c.rank()) * dtype_size(t);
    ring_reduce_scatter(c, send, own_chunk, count, t, op);
    ring_all_gather(c, own_chunk, recv, count, t);
}

} // namespace shardlab::algo
