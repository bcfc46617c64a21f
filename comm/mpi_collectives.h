// The same operations through the MPI library's own collectives (MPI_Allgatherv, ...), for
// comparison in benchmarks and tests: the MPI transport's `native` algorithm. Same argument
// conventions as comm/algorithms.h. bf16 and fp16 reductions use user-defined MPI ops that add in
// fp32; average is a sum divided locally. Each call starts MPI's nonblocking form and hands the
// request to `wait` (the transport's watchdog), so a native collective that hangs is reported
// like a ring one. The transport runs them as stream tasks.
#pragma once

#include "comm/collective_op.h"
#include "core/dtype.h"

#include <mpi.h>

#include <cstddef>
#include <functional>

namespace shardlab {

class MpiCollectives {
  public:
    explicit MpiCollectives(MPI_Comm comm); // uses comm as given (the transport's duplicate)
    ~MpiCollectives();
    MpiCollectives(const MpiCollectives&) = delete;
    MpiCollectives& operator=(const MpiCollectives&) = delete;

    using Wait = std::function<void(MPI_Request&)>;
    void run(const CollectiveCall& call, const Wait& wait);
    void barrier(const Wait& wait);

  private:
    void all_gather(const void* send, void* recv, std::size_t count, DType t, const Wait& wait);
    void reduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                        const Wait& wait);
    void all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                    const Wait& wait);
    void broadcast(const void* send, void* recv, std::size_t count, DType t, int root,
                   const Wait& wait);
    void reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op, int root,
                const Wait& wait);
    void gather(const void* send, void* recv, std::size_t count, DType t, int root,
                const Wait& wait);
    void scatter(const void* send, void* recv, std::size_t count, DType t, int root,
                 const Wait& wait);

    MPI_Datatype mpi_type(DType t) const;
    MPI_Op sum_op(DType t) const;
    void counts_and_displs(std::size_t count, int* counts, int* displs) const;

    MPI_Comm comm_;
    int rank_ = 0, size_ = 1;
    MPI_Datatype bf16_type_ = MPI_DATATYPE_NULL, f16_type_ = MPI_DATATYPE_NULL;
    MPI_Op bf16_sum_ = MPI_OP_NULL, f16_sum_ = MPI_OP_NULL;
};

} // namespace shardlab
