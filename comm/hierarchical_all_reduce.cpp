// Two-level AllReduce: reduce-scatter inside the node (each of the L ranks gets the node's sum of
// one 1/L piece), all-reduce that piece across the nodes among the ranks of the same place (a
// ring of M), all-gather inside the node. Per rank, 2(M-1)/M of S/L crosses the network instead
// of the flat ring's share of 2(N-1)/N·S; the intra-node steps carry the rest. Any split of the
// buffer works for an all-reduce, so the pieces are Chunking{count, L}'s and nothing is packed.
#include "comm/algorithms.h"
#include "comm/chunking.h"
#include "comm/segmented_ring.h"
#include "comm/two_level.h"

namespace shardlab::algo {

namespace {
Segments even_split(std::size_t count, int n) {
    const Chunking ch{count, n};
    Segments s;
    for (int j = 0; j < n; ++j) s.sizes.push_back(ch.size(j));
    return s;
}
} // namespace

void hierarchical_all_reduce(CollectiveContext& c, const void* send, void* recv, std::size_t count,
                             DType t, ReduceOp op) {
    TwoLevel g(c);
    const std::size_t es = dtype_size(t);
    const float divisor = op == ReduceOp::avg ? float(c.size()) : 1.0f;
    CollectiveContext intra = g.intra_context(c), inter = g.inter_context(c);
    const Segments node_seg = even_split(count, g.per_node);
    char* mine = static_cast<char*>(recv) + node_seg.offset(g.local) * es;
    const std::size_t len = node_seg.size(g.local);

    // The divisor goes with the last reduction: across the nodes, or inside the one node.
    c.report([](CollectiveTrace& tr) { tr.phase("intra-node reduce-scatter"); });
    ring_reduce_scatter_v(intra, send, mine, node_seg, t, g.nodes == 1 ? divisor : 1.0f);
    c.report([=](CollectiveTrace& tr) { tr.buffer(0, "node's sum of my piece", mine, len, t); });
    if (g.nodes > 1) {
        const Segments sub = even_split(len, g.nodes);
        char* part = mine + sub.offset(g.node) * es;
        c.report([](CollectiveTrace& tr) { tr.phase("inter-node all-reduce"); });
        ring_reduce_scatter_v(inter, mine, part, sub, t, divisor);
        ring_all_gather_v(inter, part, mine, sub, t);
        c.report([=](CollectiveTrace& tr) { tr.buffer(0, "my piece, all nodes", mine, len, t); });
    }
    c.report([](CollectiveTrace& tr) { tr.phase("intra-node all-gather"); });
    ring_all_gather_v(intra, mine, recv, node_seg, t);
    c.report([=](CollectiveTrace& tr) { tr.buffer(0, "recv", recv, count, t); });
}

} // namespace shardlab::algo
