// Direct scatter: the root sends chunk j straight to rank j, in rank order.
#include "comm/algorithms.h"
#include "comm/chunking.h"

#include <cstring>

namespace shardlab::algo {

void direct_scatter(CollectiveContext& c, const void* send, void* recv, std::size_t count, DType t,
                    int root) {
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, c.size()};
    const int r = c.rank();
    if (c.trace) c.trace->phase("scatter");
    if (r != root) {
        c.transport.recv(recv, ch.size(r) * es, root);
        if (c.trace) {
            c.trace->transfer(0, false, root, r, ch.size(r));
            c.trace->buffer(0, "recv", recv, ch.size(r), t);
        }
        return;
    }
    const char* in = static_cast<const char*>(send);
    for (int j = 0; j < c.size(); ++j) {
        if (j == root) continue;
        c.transport.send(in + ch.offset(j) * es, ch.size(j) * es, j);
        if (c.trace) c.trace->transfer(0, true, j, j, ch.size(j));
    }
    if (in + ch.offset(r) * es != recv) std::memcpy(recv, in + ch.offset(r) * es, ch.size(r) * es);
    if (c.trace) c.trace->buffer(0, "recv", recv, ch.size(r), t);
}

} // namespace shardlab::algo
