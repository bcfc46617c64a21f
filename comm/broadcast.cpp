// Broadcast as scatter + ring all-gather (van de Geijn): the root sends each rank one chunk, then
// the ring circulates them. The root sends about 2(N-1)/N·S instead of the (N-1)·S of sending
// the whole buffer to everyone, and every link carries traffic at once.
#include "comm/algorithms.h"
#include "comm/chunking.h"

namespace shardlab::algo {

void scatter_allgather_broadcast(CollectiveContext& c, const void* send, void* recv,
                                 std::size_t count, DType t, int root) {
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, c.size()};
    char* out = static_cast<char*>(recv);
    if (c.rank() == root) c.stream.memcpy(recv, send, count * es);
    // Scatter in place: each rank's chunk lands at its own offset of recv.
    direct_scatter(c, recv, out + ch.offset(c.rank()) * es, count, t, root);
    ring_all_gather(c, out + ch.offset(c.rank()) * es, recv, count, t);
}

} // namespace shardlab::algo
