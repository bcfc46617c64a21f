// Direct gather: every non-root sends its chunk to the root, which receives them all in one
// exchange. Each chunk crosses one link once; the root's inbound link is the bottleneck, as it
// must be.
#include "comm/algorithms.h"
#include "comm/chunking.h"

namespace shardlab::algo {

void direct_gather(CollectiveContext& c, const void* send, void* recv, std::size_t count, DType t,
                   int root) {
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, c.size()};
    const int r = c.rank();
    c.report([](CollectiveTrace& tr) { tr.phase("gather"); });
    if (r != root) {
        c.transport.send(c.stream, send, ch.size(r) * es, root);
        c.report([=](CollectiveTrace& tr) { tr.transfer(0, true, root, r, ch.size(r)); });
        return;
    }
    char* out = static_cast<char*>(recv);
    c.stream.memcpy(out + ch.offset(r) * es, send, ch.size(r) * es);
    std::vector<Transfer> from_all;
    for (int j = 0; j < c.size(); ++j)
        if (j != root) from_all.push_back({false, out + ch.offset(j) * es, ch.size(j) * es, j});
    c.transport.exchange(c.stream, from_all);
    c.report([=](CollectiveTrace& tr) {
        for (int j = 0; j < ch.n; ++j)
            if (j != root) tr.transfer(0, false, j, j, ch.size(j));
        tr.buffer(0, "recv", recv, count, t);
    });
}

} // namespace shardlab::algo
