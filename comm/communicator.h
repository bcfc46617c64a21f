// Communicator: the one object the rest of shardlab talks to for collectives. It chooses the
// algorithm (shardlab's own ring family, or the MPI library's `native` ones), times each call
// and records it in CommStats. Passed by reference; there is no global communicator.
#pragma once

#include "comm/collective_context.h"
#include "comm/comm_stats.h"
#include "comm/native_collectives.h"
#include "comm/reduce_kernels.h"
#include "comm/transport.h"
#include "core/dtype.h"
#include "core/memory_tracker.h"

#include <mpi.h>

#include <cstddef>
#include <string>

namespace shardlab {

enum class Algo { ring, native };
Algo parse_algo(const std::string& name); // "ring" | "native"
const char* algo_name(Algo a);

enum class CollectiveOp {
    allgather,
    reduce_scatter,
    allreduce,
    broadcast,
    reduce,
    gather,
    scatter
};
CollectiveOp parse_op(const std::string& name); // throws Error listing the valid names
const char* op_name(CollectiveOp op);
bool op_has_root(CollectiveOp op);
bool op_reduces(CollectiveOp op);

// One collective call, for code that picks the operation at run time (bench, walkthrough).
// Buffer sizes follow comm/algorithms.h: e.g. allgather's send holds chunk(rank) elements.
struct CollectiveCall {
    CollectiveOp op = CollectiveOp::allreduce;
    const void* send = nullptr;
    void* recv = nullptr;
    std::size_t count = 0; // S / dtype size: the whole buffer
    DType dtype = DType::f32;
    ReduceOp reduce = ReduceOp::sum;
    int root = 0;
};

// How many elements this rank's send and recv buffers hold for one call (0: not used).
struct CallSizes {
    std::size_t send = 0, recv = 0;
};
CallSizes call_sizes(CollectiveOp op, std::size_t count, int n, int rank, int root);

class Communicator {
  public:
    Communicator(MPI_Comm comm, MemoryTracker& tracker);
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int rank() const { return transport_.rank(); }
    int size() const { return transport_.size(); }
    MPI_Comm mpi_comm() const { return transport_.comm(); }

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

    void run(const CollectiveCall& call, Algo a);

    // Allocates the collectives' scratch (comm_buffers) up front, so memory does not grow in the
    // middle of a run and its peak is the same from the first step on.
    void reserve_scratch(std::size_t bytes) { scratch_.get(bytes); }

    CommStats& stats() { return stats_; }
    const CommStats& stats() const { return stats_; }
    // Step-by-step observer for the ring family (nullptr: none). Not owned.
    void set_trace(CollectiveTrace* trace) { context_.trace = trace; }

  private:
    template <typename Body>
    void timed(const char* op, Algo a, Body&& body);
    void check_root(int root) const;

    Transport transport_;
    ScratchBuffer scratch_;
    CollectiveContext context_;
    NativeCollectives native_;
    CommStats stats_;
};

} // namespace shardlab
