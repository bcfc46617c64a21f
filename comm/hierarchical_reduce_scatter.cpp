// Two-level ReduceScatter, intra-node first. The result must be the flat one — chunk(rank) of
// Chunking{count, N} — so the input is first packed by place in node: all the chunks destined
// for place 0 of every node, then place 1, ... Reduce-scattering that inside the node leaves each
// rank the node's sum of the chunks of its place, in node order; reduce-scattering those across
// the nodes (among the ranks of the same place) finishes each chunk on its owner. Only the
// second step crosses the network: (M-1)/M of a 1/L piece per rank, where the flat ring sends
// (N-1)/N of everything to a neighbour that may be on another node.
#include "comm/algorithms.h"
#include "comm/chunking.h"
#include "comm/segmented_ring.h"
#include "comm/two_level.h"

namespace shardlab::algo {

namespace {
// The chunks each place of the node ends with, in node order: the inter-node step's segments.
Segments across(const TwoLevel& g, const Chunking& ch, int place) {
    Segments s;
    for (int m = 0; m < g.nodes; ++m) s.sizes.push_back(ch.size(g.member[m][place]));
    return s;
}
} // namespace

void hierarchical_reduce_scatter(CollectiveContext& c, const void* send, void* recv,
                                 std::size_t count, DType t, ReduceOp op) {
    TwoLevel g(c);
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, c.size()};
    const float divisor = op == ReduceOp::avg ? float(c.size()) : 1.0f;
    CollectiveContext intra = g.intra_context(c), inter = g.inter_context(c);
    Segments by_place;
    for (int l = 0; l < g.per_node; ++l) by_place.sizes.push_back(across(g, ch, l).total());

    c.report([](CollectiveTrace& tr) { tr.phase("intra-node reduce-scatter"); });
    // One node, or one rank per node: the packing is the identity and one level is all there is.
    if (g.nodes == 1) return ring_reduce_scatter_v(intra, send, recv, by_place, t, divisor);
    c.report([](CollectiveTrace& tr) { tr.phase("inter-node reduce-scatter"); });
    if (g.per_node == 1)
        return ring_reduce_scatter_v(inter, send, recv, across(g, ch, 0), t, divisor);

    Allocation packed = c.scratch(count * es), piece = c.scratch(by_place.max_size() * es);
    auto* in = static_cast<const char*>(send);
    std::size_t at = 0;
    for (int l = 0; l < g.per_node; ++l)
        for (int m = 0; m < g.nodes; ++m) {
            const int owner = g.member[m][l];
            c.stream.memcpy(packed.as<char>() + at * es, in + ch.offset(owner) * es,
                            ch.size(owner) * es);
            at += ch.size(owner);
        }
    ring_reduce_scatter_v(intra, packed.data(), piece.data(), by_place, t, 1.0f);
    c.report([=, p = piece.data(), m = by_place.size(g.local)](CollectiveTrace& tr) {
        tr.buffer(0, "node's sum of my place's chunks", p, m, t);
    });
    ring_reduce_scatter_v(inter, piece.data(), recv, across(g, ch, g.local), t, divisor);
    c.report([=, m = ch.size(c.rank())](CollectiveTrace& tr) { tr.buffer(0, "recv", recv, m, t); });
}

} // namespace shardlab::algo
