// Direct gather: every non-root sends its chunk to the root, which receives them in rank order.
// Each chunk crosses one link once; the root's inbound link is the bottleneck, as it must be.
#include "comm/algorithms.h"
#include "comm/chunking.h"

#include <cstring>

namespace shardlab::algo {

void direct_gather(CollectiveContext& c, const void* send, void* recv, std::size_t count, DType t,
                   int root) {
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, c.size()};
    const int r = c.rank();
    if (c.trace) c.trace->phase("gather");
    if (r != root) {
        c.transport.send(send, ch.size(r) * es, root);
        if (c.trace) c.trace->transfer(0, true, root, r, ch.size(r));
        return;
    }
    char* out = static_cast<char*>(recv);
    if (out + ch.offset(r) * es != send)
        std::memcpy(out + ch.offset(r) * es, send, ch.size(r) * es);
    for (int j = 0; j < c.size(); ++j) {
        if (j == root) continue;
        c.transport.recv(out + ch.offset(j) * es, ch.size(j) * es, j);
        if (c.trace) c.trace->transfer(0, false, j, j, ch.size(j));
    }
    if (c.trace) c.trace->buffer(0, "recv", recv, count, t);
}

} // namespace shardlab::algo
