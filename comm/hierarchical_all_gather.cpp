// Two-level AllGather, the reverse of the two-level ReduceScatter: across the nodes first (each
// rank collects the chunks of its place in every node), then inside the node (the places swap
// their collections), then the packed-by-place buffer is put back in rank order.
#include "comm/algorithms.h"
#include "comm/chunking.h"
#include "comm/segmented_ring.h"
#include "comm/two_level.h"

namespace shardlab::algo {

void hierarchical_all_gather(CollectiveContext& c, const void* send, void* recv, std::size_t count,
                             DType t) {
    TwoLevel g(c);
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, c.size()};
    CollectiveContext intra = g.intra_context(c), inter = g.inter_context(c);
    auto across = [&](int place) {
        Segments s;
        for (int m = 0; m < g.nodes; ++m) s.sizes.push_back(ch.size(g.member[m][place]));
        return s;
    };
    Segments by_place;
    for (int l = 0; l < g.per_node; ++l) by_place.sizes.push_back(across(l).total());

    c.report([](CollectiveTrace& tr) { tr.phase("inter-node all-gather"); });
    if (g.per_node == 1) return ring_all_gather_v(inter, send, recv, across(0), t);
    c.report([](CollectiveTrace& tr) { tr.phase("intra-node all-gather"); });
    if (g.nodes == 1) return ring_all_gather_v(intra, send, recv, by_place, t);

    Allocation packed = c.scratch(count * es);
    char* mine = packed.as<char>() + by_place.offset(g.local) * es;
    ring_all_gather_v(inter, send, mine, across(g.local), t);
    c.report([=, m = by_place.size(g.local)](CollectiveTrace& tr) {
        tr.buffer(0, "my place's chunks, all nodes", mine, m, t);
    });
    ring_all_gather_v(intra, mine, packed.data(), by_place, t);
    std::size_t at = 0;
    for (int l = 0; l < g.per_node; ++l)
        for (int m = 0; m < g.nodes; ++m) {
            const int owner = g.member[m][l];
            c.stream.memcpy(static_cast<char*>(recv) + ch.offset(owner) * es,
                            packed.as<char>() + at * es, ch.size(owner) * es);
            at += ch.size(owner);
        }
    c.report([=](CollectiveTrace& tr) { tr.buffer(0, "recv", recv, count, t); });
}

} // namespace shardlab::algo
