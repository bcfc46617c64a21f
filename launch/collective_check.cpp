// Exact expectations for each collective, written from the operation's definition, independent
// of how the algorithms move data.
#include "launch/collective_check.h"

#include "comm/chunking.h"

namespace shardlab {

double check_input(int rank, std::size_t i) {
    return double((i * 7 + std::size_t(rank) * 13) % 17) - 8.0;
}

namespace {
double sum_over_ranks(int n, std::size_t i) {
    double s = 0;
    for (int r = 0; r < n; ++r) s += check_input(r, i);
    return s;
}
} // namespace

void fill_check_inputs(const CollectiveCall& c, int n, int rank) {
    const Chunking ch{c.count, n};
    const CallSizes sz = call_sizes(c.op, c.count, n, rank, c.root);
    // Ops whose send buffer is this rank's chunk hold global elements offset(rank)...
    const bool chunk_input = c.op == CollectiveOp::allgather || c.op == CollectiveOp::gather;
    const std::size_t base = chunk_input ? ch.offset(rank) : 0;
    for (std::size_t j = 0; j < sz.send; ++j)
        store_from_f32(const_cast<void*>(c.send), c.dtype, j, float(check_input(rank, base + j)));
}

std::size_t count_wrong(const CollectiveCall& c, int n, int rank) {
    const Chunking ch{c.count, n};
    const CallSizes sz = call_sizes(c.op, c.count, n, rank, c.root);
    std::size_t wrong = 0;
    int owner = 0; // the rank whose chunk holds element j, for the gathering ops
    for (std::size_t j = 0; j < sz.recv; ++j) {
        while (owner + 1 < n && ch.offset(owner + 1) <= j) ++owner;
        double expected = 0;
        switch (c.op) {
        case CollectiveOp::allgather:
        case CollectiveOp::gather:
            expected = check_input(owner, j);
            break;
        case CollectiveOp::broadcast:
            expected = check_input(c.root, j);
            break;
        case CollectiveOp::scatter:
            expected = check_input(c.root, ch.offset(rank) + j);
            break;
        case CollectiveOp::reduce_scatter:
            expected = sum_over_ranks(n, ch.offset(rank) + j);
            break;
        case CollectiveOp::allreduce:
        case CollectiveOp::reduce:
            expected = sum_over_ranks(n, j);
            break;
        }
        if (double(load_as_f32(c.recv, c.dtype, j)) != expected) ++wrong;
    }
    return wrong;
}

} // namespace shardlab
