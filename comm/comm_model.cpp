// Each formula counts the chunks a rank sends; with Chunking's uneven sizes that is "the whole
// buffer minus the chunk(s) it never sends". For N dividing count they reduce to the familiar
// (N-1)/N·S.
#include "comm/comm_model.h"

#include "comm/chunking.h"

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
