// Dispatch, timing and byte accounting around the algorithms.
#include "comm/communicator.h"

#include "comm/algorithms.h"
#include "comm/chunking.h"
#include "core/error.h"
#include "core/timer.h"

namespace shardlab {

namespace {
constexpr const char* kOpNames[] = {"allgather", "reduce_scatter", "allreduce", "broadcast",
                                    "reduce",    "gather",         "scatter"};
} // namespace

Algo parse_algo(const std::string& name) {
    if (name == "ring") return Algo::ring;
    if (name == "native" || name == "mpi") return Algo::native;
    throw UsageError("unknown algorithm '" + name + "'; use ring or native");
}

const char* algo_name(Algo a) {
    return a == Algo::ring ? "ring" : "native";
}

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

Communicator::Communicator(MPI_Comm comm, MemoryTracker& tracker)
    : transport_(comm),
      scratch_(tracker, Category::comm_buffers), context_{transport_, tracker, scratch_, nullptr},
      native_(transport_.comm()) {}

template <typename Body>
void Communicator::timed(const char* op, Algo a, Body&& body) {
    const auto sent0 = transport_.bytes_sent(), recv0 = transport_.bytes_received();
    const double t0 = now_seconds();
    body();
    const double dt = now_seconds() - t0;
    const bool ring = a == Algo::ring;
    stats_.record(ring ? std::string(op) : std::string(op) + "/native",
                  transport_.bytes_sent() - sent0, transport_.bytes_received() - recv0, dt, ring);
}

void Communicator::check_root(int root) const {
    check(root >= 0 && root < size(), "root rank " + std::to_string(root) + " is outside 0.." +
                                          std::to_string(size() - 1) +
                                          "; pick a root below N=" + std::to_string(size()));
}

void Communicator::all_gather(const void* send, void* recv, std::size_t count, DType t, Algo a) {
    timed("allgather", a, [&] {
        a == Algo::ring ? algo::ring_all_gather(context_, send, recv, count, t)
                        : native_.all_gather(send, recv, count, t);
    });
}

void Communicator::reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                                  ReduceOp op, Algo a) {
    timed("reduce_scatter", a, [&] {
        a == Algo::ring ? algo::ring_reduce_scatter(context_, send, recv, count, t, op)
                        : native_.reduce_scatter(send, recv, count, t, op);
    });
}

void Communicator::all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                              Algo a) {
    timed("allreduce", a, [&] {
        a == Algo::ring ? algo::ring_all_reduce(context_, send, recv, count, t, op)
                        : native_.all_reduce(send, recv, count, t, op);
    });
}

void Communicator::broadcast(const void* send, void* recv, std::size_t count, DType t, int root,
                             Algo a) {
    check_root(root);
    timed("broadcast", a, [&] {
        a == Algo::ring ? algo::scatter_allgather_broadcast(context_, send, recv, count, t, root)
                        : native_.broadcast(send, recv, count, t, root);
    });
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                          int root, Algo a) {
    check_root(root);
    timed("reduce", a, [&] {
        a == Algo::ring
            ? algo::reduce_scatter_gather_reduce(context_, send, recv, count, t, op, root)
            : native_.reduce(send, recv, count, t, op, root);
    });
}

void Communicator::gather(const void* send, void* recv, std::size_t count, DType t, int root,
                          Algo a) {
    check_root(root);
    timed("gather", a, [&] {
        a == Algo::ring ? algo::direct_gather(context_, send, recv, count, t, root)
                        : native_.gather(send, recv, count, t, root);
    });
}

void Communicator::scatter(const void* send, void* recv, std::size_t count, DType t, int root,
                           Algo a) {
    check_root(root);
    timed("scatter", a, [&] {
        a == Algo::ring ? algo::direct_scatter(context_, send, recv, count, t, root)
                        : native_.scatter(send, recv, count, t, root);
    });
}

void Communicator::barrier(Algo a) {
    timed("barrier", a,
          [&] { a == Algo::ring ? algo::dissemination_barrier(context_) : native_.barrier(); });
}

void Communicator::run(const CollectiveCall& c, Algo a) {
    switch (c.op) {
    case CollectiveOp::allgather:
        return all_gather(c.send, c.recv, c.count, c.dtype, a);
    case CollectiveOp::reduce_scatter:
        return reduce_scatter(c.send, c.recv, c.count, c.dtype, c.reduce, a);
    case CollectiveOp::allreduce:
        return all_reduce(c.send, c.recv, c.count, c.dtype, c.reduce, a);
    case CollectiveOp::broadcast:
        return broadcast(c.send, c.recv, c.count, c.dtype, c.root, a);
    case CollectiveOp::reduce:
        return reduce(c.send, c.recv, c.count, c.dtype, c.reduce, c.root, a);
    case CollectiveOp::gather:
        return gather(c.send, c.recv, c.count, c.dtype, c.root, a);
    case CollectiveOp::scatter:
        return scatter(c.send, c.recv, c.count, c.dtype, c.root, a);
    }
}

} // namespace shardlab
