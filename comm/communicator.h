// Communicator: the one object the rest of shardlab talks to for collectives, over one group of
// ranks (the world, a node, a shard or replicate group: comm/process_groups.h). Every call is a
// descriptor {op, algorithm} run on this group: run() looks the algorithm up in the table
// (comm/algorithm_table.h), enqueues it on the comm stream, and records it in CommStats — calls
// and bytes (in all and per link class) when enqueued, seconds (from events around the call)
// once the stream has run it. The per-op methods are spellings of run(). Every call returns at
// once; wait for an event recorded on stream() before using a result. Passed by reference; there
// is no global communicator.
#pragma once

#include "comm/algo.h"
#include "comm/collective_context.h"
#include "comm/collective_op.h"
#include "comm/comm_stats.h"
#include "comm/element_ops.h"
#include "comm/transport.h"
#include "comm/world_ranks.h"
#include "core/device_context.h"
#include "core/dtype.h"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace shardlab {

class Communicator {
  public:
    // Collectives over `transport`, run in the context's comm stream, scratch counted by its
    // tracker. `control` is duplicated for the host's own messages (agreements, reports), which
    // so never meet the comm stream's. The node layout is detected (MPI_COMM_TYPE_SHARED) until
    // set_node_layout declares another.
    Communicator(MPI_Comm control, std::unique_ptr<Transport> transport, ElementOps& elements,
                 DeviceContext& context);
    ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int rank() const { return transport_->rank(); }
    int size() const { return transport_->size(); }
    MPI_Comm mpi_comm() const { return control_; } // host thread only
    Stream& stream() { return stream_; }
    void synchronize() { stream_.synchronize(); }

    void all_gather(const void* send, void* recv, std::size_t count, DType t, Algo a = Algo::ring);
    void reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                        ReduceOp op = ReduceOp::sum, Algo a = Algo::ring);
    void all_reduce(const void* send, void* recv, std::size_t count, DType t,
                    ReduceOp op = ReduceOp::sum, Algo a = Algo::ring);
    void broadcast(const void* send, void* recv, std::size_t count, DType t, int root,
                   Algo a = Algo::ring);
    void reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op, int root,
                Algo a = Algo::ring);
    void gather(const void* send, void* recv, std::size_t count, DType t, int root,
                Algo a = Algo::ring);
    void scatter(const void* send, void* recv, std::size_t count, DType t, int root,
                 Algo a = Algo::ring);
    void barrier(Algo a = Algo::ring);

    // The one dispatch: {call.op, a} on this communicator's ranks. Throws UsageError for an
    // algorithm the table does not have for the op, or a layout it cannot run on.
    void run(const CollectiveCall& call, Algo a);

    // Which node each rank of this communicator is on: bytes are counted by link class from it,
    // and the hierarchical algorithms follow it. Same on every rank.
    void set_node_layout(const NodeLayout& layout);
    const NodeLayout& node_layout() const { return layout_; }

    // The group's name in trace spans ("world", or "node", "shard", "replicate" for the process
    // groups: comm/process_groups.h) and in the watchdogs' reports, which name a group's ranks by
    // world rank ("world rank 3 (rank 1 of the replicate group)").
    void set_name(std::string name);
    const std::string& name() const { return name_; }

    // What the next call is for ("unit h.3"): named if the watchdog reports it
    // (comm/mpi_watchdog.h).
    void label_next(std::string what) { next_what_ = std::move(what); }
    // How long one collective may wait for its peers before the job ends with a report of where
    // every rank is (<= 0: forever; default kDefaultCollectiveTimeout). Call on every rank.
    void set_collective_timeout(double seconds);

    // Waits for the comm stream, so that every call's seconds are known, and returns the stats.
    CommStats& stats();
    // Step-by-step observer for the ring family (nullptr: none). Not owned.
    void set_trace(CollectiveTrace* trace) { context_.trace = trace; }

  private:
    template <typename Body>
    void timed(const std::string& key, bool measured, std::size_t bytes, Body&& body);
    void fold_times(bool wait);
    void check_root(int root) const;

    struct PendingTime {
        std::string key;
        EventPtr start, end;
    };
    MPI_Comm control_ = MPI_COMM_NULL;
    RankNames names_; // this communicator's ranks as world ranks, for messages
    std::unique_ptr<Transport> transport_;
    DeviceContext& device_; // its tracer, if any, gets a span per call
    Stream& stream_;
    NodeLayout layout_;
    CollectiveContext context_;
    CommStats stats_;
    std::deque<PendingTime> pending_; // calls whose seconds the stream has not yet given
    std::uint64_t seq_ = 0;           // collectives enqueued so far (the watchdog's numbering)
    std::string next_what_;
    std::string name_ = "world";
};

} // namespace shardlab
