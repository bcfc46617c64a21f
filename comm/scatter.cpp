// Direct scatter: the root sends chunk j straight to rank j, all in one exchange.
#include "comm/algorithms.h"
#include "comm/chunking.h"

namespace shardlab::algo {

void direct_scatter(CollectiveContext& c, const void* send, void* recv, std::size_t count, DType t,
                    int root) {
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, c.size()};
    const int r = c.rank();
    c.report([](CollectiveTrace& tr) { tr.phase("scatter"); });
    if (r != root) {
        c.transport.recv(c.stream, recv, ch.size(r) * es, root);
        c.report([=](CollectiveTrace& tr) {
            tr.transfer(0, false, root, r, ch.size(r));
            tr.buffer(0, "recv", recv, ch.size(r), t);
        });
        return;
    }
    const char* in = static_cast<const char*>(send);
    std::vector<Transfer> to_all;
    for (int j = 0; j < c.size(); ++j)
        if (j != root)
            to_all.push_back({true, const_cast<char*>(in) + ch.offset(j) * es, ch.size(j) * es, j});
    c.transport.exchange(c.stream, to_all);
    c.stream.memcpy(recv, in + ch.offset(r) * es, ch.size(r) * es);
    c.report([=](CollectiveTrace& tr) {
        for (int j = 0; j < ch.n; ++j)
            if (j != root) tr.transfer(0, true, j, j, ch.size(j));
        tr.buffer(0, "recv", recv, ch.size(r), t);
    });
}

} // namespace shardlab::algo
