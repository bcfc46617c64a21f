// Each formula counts the chunks a rank sends; with Chunking's uneven sizes that is "the whole
// buffer minus the chunk(s) it never sends". For N dividing count they reduce to the familiar
// (N-1)/N·S.
#include "comm/comm_model.h"

#include "comm/chunking.h"
#include "comm/halving_doubling_schedule.h"
#include "core/error.h"

namespace shardlab {

std::uint64_t ring_bytes_sent(CollectiveOp op, std::size_t count, std::size_t elem_bytes, int n,
                              int rank, int root) {
    const Chunking ch{count, n};
    auto chunk = [&](int j) { return std::uint64_t(ch.size(ring_mod(j, n))) * elem_bytes; };
    const std::uint64_t S = std::uint64_t(count) * elem_bytes;
    const bool is_root = rank == root;
    if (n == 1) return 0;
    switch (op) {
    case CollectiveOp::allgather:
        return S - chunk(rank + 1); // all chunks but the right neighbour's
    case CollectiveOp::reduce_scatter:
        return S - chunk(rank); // all partials but its own chunk
    case CollectiveOp::allreduce:
        return (S - chunk(rank)) + (S - chunk(rank + 1));
    case CollectiveOp::broadcast: // scatter (root only) + all-gather
        return (is_root ? S - chunk(root) : 0) + (S - chunk(rank + 1));
    case CollectiveOp::reduce: // reduce-scatter + gather of the own chunk to the root
        return (S - chunk(rank)) + (is_root ? 0 : chunk(rank));
    case CollectiveOp::gather:
        return is_root ? 0 : chunk(rank);
    case CollectiveOp::scatter:
        return is_root ? S - chunk(root) : 0;
    }
    return 0;
}

int ring_steps(CollectiveOp op, int n) {
    switch (op) {
    case CollectiveOp::allgather:
    case CollectiveOp::reduce_scatter:
        return n - 1;
    case CollectiveOp::allreduce:
        return 2 * (n - 1);
    default:
        throw UsageError(std::string("ring_steps: ") + op_name(op) +
                         " has steps that differ by rank; use allgather, reduce_scatter or "
                         "allreduce");
    }
}

double bus_bandwidth_factor(CollectiveOp op, int n) {
    switch (op) {
    case CollectiveOp::allreduce:
        return 2.0 * (n - 1) / n;
    case CollectiveOp::allgather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::gather:
    case CollectiveOp::scatter:
        return double(n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
        return 1.0;
    }
    return 1.0;
}

} // namespace shardlab

// ---- Bytes by link class --------------------------------------------------------------------
// Each algorithm's sends, grouped by destination: the ring family sends to its right neighbour
// (and, for the rooted ops, straight to or from the root); halving-doubling follows its schedule;
// the two-level algorithms send inside the node in their intra-node steps and to the same place
// of the next node in their inter-node steps. The totals are ring_bytes_sent's for the ring.
namespace shardlab {

namespace {
LinkBytes ring_by_link(CollectiveOp op, std::size_t count, std::size_t es, const NodeLayout& L,
                       int r, int root) {
    const int n = L.size();
    const Chunking ch{count, n};
    LinkBytes b;
    auto to = [&](int peer, std::uint64_t bytes) { b.add(L.node(r), L.node(peer), bytes); };
    auto chunk = [&](int j) { return std::uint64_t(ch.size(j)) * es; };
    if (n == 1) return b;
    const int right = ring_mod(r + 1, n);
    const std::uint64_t rs = ring_bytes_sent(CollectiveOp::reduce_scatter, count, es, n, r, root);
    const std::uint64_t ag = ring_bytes_sent(CollectiveOp::allgather, count, es, n, r, root);
    auto scatter_from_root = [&] {
        if (r == root)
            for (int j = 0; j < n; ++j)
                if (j != root) to(j, chunk(j));
    };
    switch (op) {
    case CollectiveOp::allgather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::allreduce:
        to(right, ring_bytes_sent(op, count, es, n, r, root));
        break;
    case CollectiveOp::broadcast:
        scatter_from_root();
        to(right, ag);
        break;
    case CollectiveOp::reduce:
        to(right, rs);
        if (r != root) to(root, chunk(r));
        break;
    case CollectiveOp::gather:
        if (r != root) to(root, chunk(r));
        break;
    case CollectiveOp::scatter:
        scatter_from_root();
        break;
    }
    return b;
}

LinkBytes hd_by_link(std::size_t count, std::size_t es, const NodeLayout& L, int r) {
    LinkBytes b;
    auto to = [&](int peer, std::uint64_t bytes) { b.add(L.node(r), L.node(peer), bytes); };
    if (L.size() == 1) return b;
    const HdSchedule s = hd_schedule(L.size(), r, count);
    const std::uint64_t S = std::uint64_t(count) * es;
    if (s.partner >= 0) to(s.partner, S); // fold in (the sitter-out) or the result back
    for (const HdStep& h : s.halving) to(h.peer, (h.send_hi - h.send_lo) * es);
    for (const HdStep& h : s.doubling) to(h.peer, (h.send_hi - h.send_lo) * es);
    return b;
}

LinkBytes hier_by_link(CollectiveOp op, std::size_t count, std::size_t es, const NodeLayout& L,
                       int r) {
    const int per = L.uniform_ranks_per_node(), M = L.nodes();
    if (per == 0)
        throw UsageError("--algo hier needs every node to hold the same number of ranks; this "
                         "layout is " +
                         L.describe());
    const int m = L.node(r), l = L.local_index(r);
    const Chunking ch{count, L.size()};
    auto member = [&](int node, int place) {
        return L.members(ring_mod(node, M))[std::size_t(ring_mod(place, per))];
    };
    auto by_place = [&](int place) { // elements of all the chunks of one place, every node
        std::size_t s = 0;
        for (int k = 0; k < M; ++k) s += ch.size(member(k, place));
        return s;
    };
    std::uint64_t intra = 0, inter = 0;
    switch (op) {
    case CollectiveOp::reduce_scatter:
        intra = count - by_place(l);
        inter = by_place(l) - ch.size(r);
        break;
    case CollectiveOp::allgather:
        inter = by_place(l) - ch.size(member(m + 1, l));
        intra = count - by_place(l + 1);
        break;
    case CollectiveOp::allreduce: {
        const Chunking node_seg{count, per};
        intra = (count - node_seg.size(l)) + (count - node_seg.size(ring_mod(l + 1, per)));
        if (M > 1) {
            const Chunking sub{node_seg.size(l), M};
            inter = (sub.count - sub.size(m)) + (sub.count - sub.size(ring_mod(m + 1, M)));
        }
        break;
    }
    default:
        throw UsageError(std::string("--algo hier has no ") + op_name(op));
    }
    if (per == 1) intra = 0;
    return {intra * es, inter * es};
}
} // namespace

LinkBytes predicted_bytes_sent(CollectiveOp op, Algo algo, std::size_t count,
                               std::size_t elem_bytes, const NodeLayout& layout, int rank,
                               int root) {
    switch (algo) {
    case Algo::ring:
        return ring_by_link(op, count, elem_bytes, layout, rank, root);
    case Algo::native:
        return {};
    case Algo::hd:
        if (op != CollectiveOp::allreduce)
            throw UsageError(std::string("--algo hd has no ") + op_name(op));
        return hd_by_link(count, elem_bytes, layout, rank);
    case Algo::hier:
        return hier_by_link(op, count, elem_bytes, layout, rank);
    }
    return {};
}

} // namespace shardlab
