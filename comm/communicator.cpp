// Dispatch, timing and byte accounting around the algorithms.
#include "comm/communicator.h"

#include "comm/algorithms.h"
#include "comm/mpi_error.h"
#include "core/error.h"
#include "core/tracer.h"
#include "core/watched_stream.h"

#include <fmt/format.h>

#include <exception>

namespace shardlab {

Algo parse_algo(const std::string& name) {
    if (name == "ring") return Algo::ring;
    if (name == "native" || name == "mpi") return Algo::native;
    throw UsageError("unknown algorithm '" + name + "'; use ring or native");
}

const char* algo_name(Algo a) {
    return a == Algo::ring ? "ring" : "native";
}

Communicator::Communicator(MPI_Comm control, std::unique_ptr<Transport> transport,
                           ElementOps& elements, DeviceContext& context)
    : transport_(std::move(transport)), device_(context),
      stream_(context.comm()), context_{*transport_, elements, stream_, context.tracker(),
                                        nullptr} {
    check_mpi(MPI_Comm_dup(control, &control_), "MPI_Comm_dup");
}

Communicator::~Communicator() {
    if (std::uncaught_exceptions() > 0) return; // the transport's stream task may still run
    try {
        stream_.synchronize(); // nothing of ours may still be in flight
    } catch (const std::exception&) {
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&control_);
}

template <typename Body>
void Communicator::timed(const char* op, Algo a, std::size_t bytes, Body&& body) {
    const bool ring = a == Algo::ring;
    const std::string key = ring ? std::string(op) : std::string(op) + "/native";
    Tracer* tracer = device_.tracer();
    const Tracer::SpanId span =
        tracer ? tracer->begin(
                     stream_, next_what_.empty() ? key : key + ": " + next_what_, "collective",
                     {{"op", key}, {"bytes", bytes}, {"seq", seq_ + 1}, {"what", next_what_}})
               : Tracer::kNone;
    CollectiveId id{++seq_, key, bytes, std::move(next_what_)};
    if (auto* w = dynamic_cast<WatchedStream*>(&stream_))
        w->note_activity(
            fmt::format("{} on rank {} with ranks 0-{}", describe(id), rank(), size() - 1));
    transport_->begin_call(std::move(id));
    next_what_.clear();
    const auto sent0 = transport_->bytes_sent(), recv0 = transport_->bytes_received();
    const EventPtr start = stream_.record();
    body();
    const std::uint64_t sent = transport_->bytes_sent() - sent0;
    stats_.record(key, sent, transport_->bytes_received() - recv0, 0.0, ring);
    pending_.push_back({key, start, stream_.record()});
    if (tracer) tracer->end(stream_, span, {{"bytes_sent", sent}});
    fold_times(false);
}

// Adds up the seconds of the calls the stream has finished (all of them, waiting, when `wait`),
// so the list stays short however long nobody asks for the stats.
void Communicator::fold_times(bool wait) {
    if (wait && !pending_.empty()) stream_.synchronize();
    while (!pending_.empty() && (wait || pending_.front().end->query())) {
        const PendingTime& p = pending_.front();
        stats_.add_seconds(p.key, p.end->seconds_since(*p.start));
        pending_.pop_front();
    }
}

void Communicator::set_collective_timeout(double seconds) {
    transport_->set_timeout(seconds);
    if (auto* w = dynamic_cast<WatchedStream*>(&stream_))
        w->set_stall_timeout(seconds); // a GPU's streams: the device watchdog's limit too
}

CommStats& Communicator::stats() {
    fold_times(true);
    return stats_;
}

void Communicator::check_root(int root) const {
    check(root >= 0 && root < size(), "root rank " + std::to_string(root) + " is outside 0.." +
                                          std::to_string(size() - 1) +
                                          "; pick a root below N=" + std::to_string(size()));
}

void Communicator::all_gather(const void* send, void* recv, std::size_t count, DType t, Algo a) {
    timed("allgather", a, count * dtype_size(t), [&] {
        a == Algo::ring ? algo::ring_all_gather(context_, send, recv, count, t)
                        : transport_->native(stream_, {CollectiveOp::allgather, send, recv, count,
                                                       t, ReduceOp::sum, 0});
    });
}

void Communicator::reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                                  ReduceOp op, Algo a) {
    timed("reduce_scatter", a, count * dtype_size(t), [&] {
        a == Algo::ring ? algo::ring_reduce_scatter(context_, send, recv, count, t, op)
                        : transport_->native(
                              stream_, {CollectiveOp::reduce_scatter, send, recv, count, t, op, 0});
    });
}

void Communicator::all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                              Algo a) {
    timed("allreduce", a, count * dtype_size(t), [&] {
        a == Algo::ring
            ? algo::ring_all_reduce(context_, send, recv, count, t, op)
            : transport_->native(stream_, {CollectiveOp::allreduce, send, recv, count, t, op, 0});
    });
}

void Communicator::broadcast(const void* send, void* recv, std::size_t count, DType t, int root,
                             Algo a) {
    check_root(root);
    timed("broadcast", a, count * dtype_size(t), [&] {
        a == Algo::ring ? algo::scatter_allgather_broadcast(context_, send, recv, count, t, root)
                        : transport_->native(stream_, {CollectiveOp::broadcast, send, recv, count,
                                                       t, ReduceOp::sum, root});
    });
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                          int root, Algo a) {
    check_root(root);
    timed("reduce", a, count * dtype_size(t), [&] {
        a == Algo::ring
            ? algo::reduce_scatter_gather_reduce(context_, send, recv, count, t, op, root)
            : transport_->native(stream_, {CollectiveOp::reduce, send, recv, count, t, op, root});
    });
}

void Communicator::gather(const void* send, void* recv, std::size_t count, DType t, int root,
                          Algo a) {
    check_root(root);
    timed("gather", a, count * dtype_size(t), [&] {
        a == Algo::ring ? algo::direct_gather(context_, send, recv, count, t, root)
                        : transport_->native(stream_, {CollectiveOp::gather, send, recv, count, t,
                                                       ReduceOp::sum, root});
    });
}

void Communicator::scatter(const void* send, void* recv, std::size_t count, DType t, int root,
                           Algo a) {
    check_root(root);
    timed("scatter", a, count * dtype_size(t), [&] {
        a == Algo::ring ? algo::direct_scatter(context_, send, recv, count, t, root)
                        : transport_->native(stream_, {CollectiveOp::scatter, send, recv, count, t,
                                                       ReduceOp::sum, root});
    });
}

void Communicator::barrier(Algo a) {
    timed("barrier", a, 0, [&] {
        a == Algo::ring ? algo::dissemination_barrier(context_)
                        : transport_->native_barrier(stream_);
    });
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
