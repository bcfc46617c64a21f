// Thin wrappers over MPI's collectives with shardlab's chunking, in-place conventions and dtypes.
#include "comm/mpi_collectives.h"

#include "comm/chunking.h"
#include "comm/mpi_error.h"
#include "comm/reduce_kernels.h"
#include "core/error.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace shardlab {

namespace {
// MPI user ops are plain functions; one per 16-bit format, adding in fp32.
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
    auto* a = static_cast<const std::uint16_t*>(in);
    auto* b = static_cast<std::uint16_t*>(inout);
    for (int i = 0; i < *len; ++i) b[i] = f32_to_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
}
void f16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
    auto* a = static_cast<const std::uint16_t*>(in);
    auto* b = static_cast<std::uint16_t*>(inout);
    for (int i = 0; i < *len; ++i) b[i] = f32_to_f16(f16_to_f32(a[i]) + f16_to_f32(b[i]));
}

int as_int(std::size_t n) {
    check(n <= std::size_t(INT_MAX), "native MPI collectives take at most 2^31-1 elements; got " +
                                         std::to_string(n) + " (use --algo ring)");
    return int(n);
}

// A started nonblocking collective, completed through the caller's wait.
void wait_for(int rc, const char* what, MPI_Request& req, const MpiCollectives::Wait& wait) {
    check_mpi(rc, what);
    wait(req);
}
} // namespace

MpiCollectives::MpiCollectives(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Type_contiguous(2, MPI_BYTE, &bf16_type_);
    MPI_Type_commit(&bf16_type_);
    MPI_Type_contiguous(2, MPI_BYTE, &f16_type_);
    MPI_Type_commit(&f16_type_);
    MPI_Op_create(bf16_sum, 1, &bf16_sum_);
    MPI_Op_create(f16_sum, 1, &f16_sum_);
}

MpiCollectives::~MpiCollectives() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Op_free(&bf16_sum_);
    MPI_Op_free(&f16_sum_);
    MPI_Type_free(&bf16_type_);
    MPI_Type_free(&f16_type_);
}

MPI_Datatype MpiCollectives::mpi_type(DType t) const {
    return t == DType::i64    ? MPI_INT64_T
           : t == DType::f32  ? MPI_FLOAT
           : t == DType::bf16 ? bf16_type_
                              : f16_type_;
}

MPI_Op MpiCollectives::sum_op(DType t) const {
    return t == DType::f32 || t == DType::i64 ? MPI_SUM : t == DType::bf16 ? bf16_sum_ : f16_sum_;
}

void MpiCollectives::counts_and_displs(std::size_t count, int* counts, int* displs) const {
    const Chunking ch{count, size_};
    for (int j = 0; j < size_; ++j) {
        counts[j] = as_int(ch.size(j));
        displs[j] = as_int(ch.offset(j));
    }
}

void MpiCollectives::all_gather(const void* send, void* recv, std::size_t count, DType t,
                                const Wait& wait) {
    std::vector<int> counts(size_), displs(size_);
    counts_and_displs(count, counts.data(), displs.data());
    const char* own = static_cast<char*>(recv) + std::size_t(displs[rank_]) * dtype_size(t);
    const void* s = send == own ? MPI_IN_PLACE : send;
    MPI_Request req;
    wait_for(MPI_Iallgatherv(s, counts[rank_], mpi_type(t), recv, counts.data(), displs.data(),
                             mpi_type(t), comm_, &req),
             "MPI_Iallgatherv", req, wait);
}

void MpiCollectives::reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                                    ReduceOp op, const Wait& wait) {
    std::vector<int> counts(size_), displs(size_);
    counts_and_displs(count, counts.data(), displs.data());
    const std::size_t es = dtype_size(t);
    // MPI has no "in place at my offset" form: stage through a copy when recv aliases send.
    std::vector<char> staged;
    void* out = recv;
    if (static_cast<const char*>(send) + std::size_t(displs[rank_]) * es == recv) {
        staged.resize(std::size_t(counts[rank_]) * es);
        out = staged.data();
    }
    MPI_Request req;
    if (count % std::size_t(size_) == 0)
        wait_for(
            MPI_Ireduce_scatter_block(send, out, counts[0], mpi_type(t), sum_op(t), comm_, &req),
            "MPI_Ireduce_scatter_block", req, wait);
    else
        wait_for(MPI_Ireduce_scatter(send, out, counts.data(), mpi_type(t), sum_op(t), comm_, &req),
                 "MPI_Ireduce_scatter", req, wait);
    if (op == ReduceOp::avg) scale_down(out, out, std::size_t(counts[rank_]), t, float(size_));
    if (out != recv && !staged.empty()) std::memcpy(recv, out, staged.size());
}

void MpiCollectives::all_reduce(const void* send, void* recv, std::size_t count, DType t,
                                ReduceOp op, const Wait& wait) {
    const void* s = send == recv ? MPI_IN_PLACE : send;
    MPI_Request req;
    wait_for(MPI_Iallreduce(s, recv, as_int(count), mpi_type(t), sum_op(t), comm_, &req),
             "MPI_Iallreduce", req, wait);
    if (op == ReduceOp::avg) scale_down(recv, recv, count, t, float(size_));
}

void MpiCollectives::broadcast(const void* send, void* recv, std::size_t count, DType t, int root,
                               const Wait& wait) {
    if (rank_ == root && send != recv && count) std::memcpy(recv, send, count * dtype_size(t));
    MPI_Request req;
    wait_for(MPI_Ibcast(recv, as_int(count), mpi_type(t), root, comm_, &req), "MPI_Ibcast", req,
             wait);
}

void MpiCollectives::reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                            int root, const Wait& wait) {
    const void* s = (rank_ == root && send == recv) ? MPI_IN_PLACE : send;
    MPI_Request req;
    wait_for(MPI_Ireduce(s, recv, as_int(count), mpi_type(t), sum_op(t), root, comm_, &req),
             "MPI_Ireduce", req, wait);
    if (rank_ == root && op == ReduceOp::avg) scale_down(recv, recv, count, t, float(size_));
}

void MpiCollectives::gather(const void* send, void* recv, std::size_t count, DType t, int root,
                            const Wait& wait) {
    std::vector<int> counts(size_), displs(size_);
    counts_and_displs(count, counts.data(), displs.data());
    const char* own = static_cast<char*>(recv) + std::size_t(displs[rank_]) * dtype_size(t);
    const void* s = (rank_ == root && send == own) ? MPI_IN_PLACE : send;
    MPI_Request req;
    wait_for(MPI_Igatherv(s, counts[rank_], mpi_type(t), recv, counts.data(), displs.data(),
                          mpi_type(t), root, comm_, &req),
             "MPI_Igatherv", req, wait);
}

void MpiCollectives::scatter(const void* send, void* recv, std::size_t count, DType t, int root,
                             const Wait& wait) {
    std::vector<int> counts(size_), displs(size_);
    counts_and_displs(count, counts.data(), displs.data());
    const char* own = static_cast<const char*>(send) + std::size_t(displs[rank_]) * dtype_size(t);
    void* r = (rank_ == root && recv == own) ? MPI_IN_PLACE : recv;
    MPI_Request req;
    wait_for(MPI_Iscatterv(send, counts.data(), displs.data(), mpi_type(t), r, counts[rank_],
                           mpi_type(t), root, comm_, &req),
             "MPI_Iscatterv", req, wait);
}

void MpiCollectives::run(const CollectiveCall& c, const Wait& wait) {
    switch (c.op) {
    case CollectiveOp::allgather:
        return all_gather(c.send, c.recv, c.count, c.dtype, wait);
    case CollectiveOp::reduce_scatter:
        return reduce_scatter(c.send, c.recv, c.count, c.dtype, c.reduce, wait);
    case CollectiveOp::allreduce:
        return all_reduce(c.send, c.recv, c.count, c.dtype, c.reduce, wait);
    case CollectiveOp::broadcast:
        return broadcast(c.send, c.recv, c.count, c.dtype, c.root, wait);
    case CollectiveOp::reduce:
        return reduce(c.send, c.recv, c.count, c.dtype, c.reduce, c.root, wait);
    case CollectiveOp::gather:
        return gather(c.send, c.recv, c.count, c.dtype, c.root, wait);
    case CollectiveOp::scatter:
        return scatter(c.send, c.recv, c.count, c.dtype, c.root, wait);
    }
}

void MpiCollectives::barrier(const Wait& wait) {
    MPI_Request req;
    wait_for(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier", req, wait);
}

} // namespace shardlab
