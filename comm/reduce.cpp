// Reduce to a root as ring reduce-scatter + direct gather (Rabenseifner's idea on a ring): the
// reduction work and the traffic are spread over all ranks instead of funnelled into the root.
// The root's result has the same bits as an all-reduce's.
#include "comm/algorithms.h"
#include "comm/chunking.h"

namespace shardlab::algo {

void reduce_scatter_gather_reduce(CollectiveContext& c, const void* send, void* recv,
                                  std::size_t count, DType t, ReduceOp op, int root) {
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, c.size()};
    const int r = c.rank();
    // The root reduces its chunk straight into place; the others into a chunk of scratch.
    Allocation chunk;
    void* reduced = nullptr;
    if (r == root) {
        reduced = static_cast<char*>(recv) + ch.offset(r) * es;
    } else {
        chunk = c.scratch(ch.size(r) * es);
        reduced = chunk.data();
    }
    ring_reduce_scatter(c, send, reduced, count, t, op);
    direct_gather(c, reduced, recv, count, t, root);
}

} // namespace shardlab::algo
