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
    return t == DType::f32 ? MPI_FLOAT : t == DType::bf16 ? bf16_type_ : f16_type_;
}

MPI_Op MpiCollectives::sum_op(DType t) const {
    return t == DType::f32 ? MPI_SUM : t == DType::bf16 ? bf16_sum_ : f16_sum_;
}

void MpiCollectives::counts_and_displs(std::size_t count, int* counts, int* displs) const {
    const Chunking ch{count, size_};
    for (int j = 0; j < size_; ++j) {
        counts[j] = as_int(ch.size(j));
        displs[j] = as_int(ch.offset(j));
    }
}

void MpiCollectives::all_gather(const void* send, void* recv, std::size_t count, DType t) {
    std::vector<int> counts(size_), displs(size_);
    counts_and_displs(count, counts.data(), displs.data());
    const char* own = static_cast<char*>(recv) + std::size_t(displs[rank_]) * dtype_size(t);
    const void* s = send == own ? MPI_IN_PLACE : send;
    check_mpi(MPI_Allgatherv(s, counts[rank_], mpi_type(t), recv, counts.data(), displs.data(),
                             mpi_type(t), comm_),
              "MPI_Allgatherv");
}

void MpiCollectives::reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                                    ReduceOp op) {
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
    bool even = count % std::size_t(size_) == 0;
    if (even)
        check_mpi(MPI_Reduce_scatter_block(send, out, counts[0], mpi_type(t), sum_op(t), comm_),
                  "MPI_Reduce_scatter_block");
    else
        check_mpi(MPI_Reduce_scatter(send, out, counts.data(), mpi_type(t), sum_op(t), comm_),
                  "MPI_Reduce_scatter");
    if (op == ReduceOp::avg) scale_down(out, out, std::size_t(counts[rank_]), t, float(size_));
    if (out != recv) std::memcpy(recv, out, staged.size());
}

void MpiCollectives::all_reduce(const void* send, void* recv, std::size_t count, DType t,
                                ReduceOp op) {
    const void* s = send == recv ? MPI_IN_PLACE : send;
    check_mpi(MPI_Allreduce(s, recv, as_int(count), mpi_type(t), sum_op(t), comm_),
              "MPI_Allreduce");
    if (op == ReduceOp::avg) scale_down(recv, recv, count, t, float(size_));
}

void MpiCollectives::broadcast(const void* send, void* recv, std::size_t count, DType t, int root) {
    if (rank_ == root && send != recv) std::memcpy(recv, send, count * dtype_size(t));
    check_mpi(MPI_Bcast(recv, as_int(count), mpi_type(t), root, comm_), "MPI_Bcast");
}

void MpiCollectives::reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                            int root) {
    const void* s = (rank_ == root && send == recv) ? MPI_IN_PLACE : send;
    check_mpi(MPI_Reduce(s, recv, as_int(count), mpi_type(t), sum_op(t), root, comm_),
              "MPI_Reduce");
    if (rank_ == root && op == ReduceOp::avg) scale_down(recv, recv, count, t, float(size_));
}

void MpiCollectives::gather(const void* send, void* recv, std::size_t count, DType t, int root) {
    std::vector<int> counts(size_), displs(size_);
    counts_and_displs(count, counts.data(), displs.data());
    const char* own = static_cast<char*>(recv) + std::size_t(displs[rank_]) * dtype_size(t);
    const void* s = (rank_ == root && send == own) ? MPI_IN_PLACE : send;
    check_mpi(MPI_Gatherv(s, counts[rank_], mpi_type(t), recv, counts.data(), displs.data(),
                          mpi_type(t), root, comm_),
              "MPI_Gatherv");
}

void MpiCollectives::scatter(const void* send, void* recv, std::size_t count, DType t, int root) {
    std::vector<int> counts(size_), displs(size_);
    counts_and_displs(count, counts.data(), displs.data());
    const char* own = static_cast<const char*>(send) + std::size_t(displs[rank_]) * dtype_size(t);
    void* r = (rank_ == root && recv == own) ? MPI_IN_PLACE : recv;
    check_mpi(MPI_Scatterv(send, counts.data(), displs.data(), mpi_type(t), r, counts[rank_],
                           mpi_type(t), root, comm_),
              "MPI_Scatterv");
}

void MpiCollectives::run(const CollectiveCall& c) {
    switch (c.op) {
    case CollectiveOp::allgather:
        return all_gather(c.send, c.recv, c.count, c.dtype);
    case CollectiveOp::reduce_scatter:
        return reduce_scatter(c.send, c.recv, c.count, c.dtype, c.reduce);
    case CollectiveOp::allreduce:
        return all_reduce(c.send, c.recv, c.count, c.dtype, c.reduce);
    case CollectiveOp::broadcast:
        return broadcast(c.send, c.recv, c.count, c.dtype, c.root);
    case CollectiveOp::reduce:
        return reduce(c.send, c.recv, c.count, c.dtype, c.reduce, c.root);
    case CollectiveOp::gather:
        return gather(c.send, c.recv, c.count, c.dtype, c.root);
    case CollectiveOp::scatter:
        return scatter(c.send, c.recv, c.count, c.dtype, c.root);
    }
}

void MpiCollectives::barrier() {
    check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

} // namespace shardlab
