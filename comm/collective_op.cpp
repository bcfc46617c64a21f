// Names and buffer sizes of the collective operations.
#include "comm/collective_op.h"

#include "comm/chunking.h"
#include "core/error.h"

namespace shardlab {

namespace {
constexpr const char* kOpNames[] = {"allgather", "reduce_scatter", "allreduce", "broadcast",
                                    "reduce",    "gather",         "scatter"};
} // namespace

CollectiveOp parse_op(const std::string& name) {
    for (int i = 0; i < 7; ++i)
        if (name == kOpNames[i]) return CollectiveOp(i);
    throw UsageError(
        "unknown collective '" + name +
        "'; use one of allgather, reduce_scatter, allreduce, broadcast, reduce, gather, "
        "scatter");
}

const char* op_name(CollectiveOp op) {
    return kOpNames[int(op)];
}

bool op_has_root(CollectiveOp op) {
    return op == CollectiveOp::broadcast || op == CollectiveOp::reduce ||
           op == CollectiveOp::gather || op == CollectiveOp::scatter;
}

bool op_reduces(CollectiveOp op) {
    return op == CollectiveOp::reduce_scatter || op == CollectiveOp::allreduce ||
           op == CollectiveOp::reduce;
}

const char* reduce_op_name(ReduceOp op) {
    return op == ReduceOp::sum ? "sum" : "avg";
}

CallSizes call_sizes(CollectiveOp op, std::size_t count, int n, int rank, int root) {
    const std::size_t own = Chunking{count, n}.size(rank);
    const bool is_root = rank == root;
    switch (op) {
    case CollectiveOp::allgather:
        return {own, count};
    case CollectiveOp::reduce_scatter:
        return {count, own};
    case CollectiveOp::allreduce:
        return {count, count};
    case CollectiveOp::broadcast:
        return {is_root ? count : 0, count};
    case CollectiveOp::reduce:
        return {count, is_root ? count : 0};
    case CollectiveOp::gather:
        return {own, is_root ? count : 0};
    case CollectiveOp::scatter:
        return {is_root ? count : 0, own};
    }
    return {};
}

} // namespace shardlab
