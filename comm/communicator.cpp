// Dispatch, timing and byte accounting around the algorithms.
#include "comm/communicator.h"

#include "comm/algorithm_table.h"
#include "comm/algorithms.h"
#include "comm/mpi_error.h"
#include "core/error.h"
#include "core/tracer.h"
#include "core/watched_stream.h"

#include <fmt/format.h>

#include <exception>

namespace shardlab {

Communicator::Communicator(MPI_Comm control, std::unique_ptr<Transport> transport,
                           ElementOps& elements, DeviceContext& context)
    : names_(control), transport_(std::move(transport)), device_(context),
      stream_(context.comm()), context_{*transport_,       elements, stream_,
                                        context.tracker(), nullptr,  &layout_} {
    check_mpi(MPI_Comm_dup(control, &control_), "MPI_Comm_dup");
    set_node_layout(NodeLayout::detect(control_));
}

void Communicator::set_node_layout(const NodeLayout& layout) {
    check(layout.size() == size(), "a node layout of " + std::to_string(layout.size()) +
                                       " ranks for a communicator of " + std::to_string(size()));
    layout_ = layout;
    transport_->set_nodes(layout_);
}

void Communicator::set_name(std::string name) {
    name_ = std::move(name);
    names_.set_group(name_);
    transport_->set_group_name(name_);
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
void Communicator::timed(const std::string& key, bool measured, std::size_t bytes, Body&& body) {
    Tracer* tracer = device_.tracer();
    // The world's spans keep their plain names; a group's carry it ("allgather@shard: ...").
    const std::string title = name_ == "world" ? key : key + "@" + name_;
    const Tracer::SpanId span =
        tracer ? tracer->begin(stream_, next_what_.empty() ? title : title + ": " + next_what_,
                               "collective",
                               {{"op", key},
                                {"group", name_},
                                {"bytes", bytes},
                                {"seq", seq_ + 1},
                                {"what", next_what_}})
               : Tracer::kNone;
    CollectiveId id{++seq_, key, bytes, std::move(next_what_)};
    if (auto* w = dynamic_cast<WatchedStream*>(&stream_))
        w->note_activity(
            fmt::format("{} on {} with {}", describe(id), names_.one(rank()), names_.members()));
    transport_->begin_call(std::move(id));
    next_what_.clear();
    const auto sent0 = transport_->bytes_sent(), recv0 = transport_->bytes_received();
    const LinkBytes link0 = transport_->sent_by_link();
    const EventPtr start = stream_.record();
    body();
    const std::uint64_t sent = transport_->bytes_sent() - sent0;
    const LinkBytes by_link = transport_->sent_by_link() - link0;
    stats_.record(key, sent, transport_->bytes_received() - recv0, by_link, 0.0, measured);
    pending_.push_back({key, start, stream_.record()});
    if (tracer)
        tracer->end(stream_, span,
                    {{"bytes_sent", sent},
                     {"intra_node_bytes", by_link.intra_node},
                     {"inter_node_bytes", by_link.inter_node}});
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

void Communicator::run(const CollectiveCall& c, Algo a) {
    const AlgorithmRow& row = find_algorithm(c.op, a);
    if (op_has_root(c.op)) check_root(c.root);
    timed(stats_key(c.op, a), bytes_measured(a), c.count * dtype_size(c.dtype),
          [&] { row.run(context_, c); });
}

void Communicator::all_gather(const void* send, void* recv, std::size_t count, DType t, Algo a) {
    run({CollectiveOp::allgather, send, recv, count, t, ReduceOp::sum, 0}, a);
}

void Communicator::reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                                  ReduceOp op, Algo a) {
    run({CollectiveOp::reduce_scatter, send, recv, count, t, op, 0}, a);
}

void Communicator::all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                              Algo a) {
    run({CollectiveOp::allreduce, send, recv, count, t, op, 0}, a);
}

void Communicator::broadcast(const void* send, void* recv, std::size_t count, DType t, int root,
                             Algo a) {
    run({CollectiveOp::broadcast, send, recv, count, t, ReduceOp::sum, root}, a);
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                          int root, Algo a) {
    run({CollectiveOp::reduce, send, recv, count, t, op, root}, a);
}

void Communicator::gather(const void* send, void* recv, std::size_t count, DType t, int root,
                          Algo a) {
    run({CollectiveOp::gather, send, recv, count, t, ReduceOp::sum, root}, a);
}

void Communicator::scatter(const void* send, void* recv, std::size_t count, DType t, int root,
                           Algo a) {
    run({CollectiveOp::scatter, send, recv, count, t, ReduceOp::sum, root}, a);
}

// The barrier is no collective on data, so not a table row: ring means shardlab's own.
void Communicator::barrier(Algo a) {
    const bool own = a != Algo::native;
    timed(own ? "barrier" : "barrier/native", own, 0, [&] {
        own ? algo::dissemination_barrier(context_) : transport_->native_barrier(stream_);
    });
}

} // namespace shardlab
