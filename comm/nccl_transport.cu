// NCCL behind the Transport interface.
#include "comm/nccl_transport.h"

#include "comm/chunking.h"
#include "comm/mpi_error.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_stream.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>
#include <thread>

namespace shardlab {

namespace {
class NcclTransport : public Transport {
  public:
    explicit NcclTransport(MPI_Comm comm) {
        MPI_Comm_rank(comm, &rank_);
        MPI_Comm_size(comm, &size_);
        ncclUniqueId id{};
        if (rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
        check_mpi(MPI_Bcast(&id, int(sizeof id), MPI_BYTE, 0, comm), "MPI_Bcast");
        check(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
        cuda::check_cuda(cudaMalloc(&barrier_word_, sizeof(float)), "cudaMalloc");
        // Zero, so that barriers sum zeros (the value is never read, but stays finite).
        cuda::check_cuda(cudaMemsetAsync(barrier_word_, 0, sizeof(float), nullptr),
                         "cudaMemsetAsync");
        cuda::check_cuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    }
    ~NcclTransport() override {
        // The streams have drained (the backend's context synchronises before its transports
        // go); after an error, abort instead: a peer may never arrive. And then leak the barrier
        // word: cudaFree waits for the whole device, whose streams may still wait in another
        // communicator's collective (a process group's, or the world's, not aborted yet).
        if (std::uncaught_exceptions() > 0) {
            ncclCommAbort(comm_);
            return;
        }
        ncclCommDestroy(comm_);
        cudaFree(barrier_word_);
    }
    NcclTransport(const NcclTransport&) = delete;
    NcclTransport& operator=(const NcclTransport&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }

    void native(Stream& s, const CollectiveCall& c) override {
        const cudaStream_t cs = cuda::stream_of(s);
        const ncclDataType_t t = type_of(c.dtype);
        const ncclRedOp_t op = c.reduce == ReduceOp::avg ? ncclAvg : ncclSum;
        const Chunking ch{c.count, size_};
        const bool even = c.count % std::size_t(size_) == 0;
        switch (c.op) {
        case CollectiveOp::allgather:
            if (even)
                return check(ncclAllGather(c.send, c.recv, ch.size(0), t, comm_, cs),
                             "ncclAllGather");
            return all_gather_uneven(c, ch, cs);
        case CollectiveOp::reduce_scatter:
            if (even)
                return check(ncclReduceScatter(c.send, c.recv, ch.size(0), t, op, comm_, cs),
                             "ncclReduceScatter");
            return reduce_scatter_uneven(c, ch, op, cs);
        case CollectiveOp::allreduce:
            return check(ncclAllReduce(c.send, c.recv, c.count, t, op, comm_, cs), "ncclAllReduce");
        case CollectiveOp::broadcast:
            return check(ncclBroadcast(c.send, c.recv, c.count, t, c.root, comm_, cs),
                         "ncclBroadcast");
        case CollectiveOp::reduce:
            return check(ncclReduce(c.send, c.recv, c.count, t, op, c.root, comm_, cs),
                         "ncclReduce");
        case CollectiveOp::gather:
        case CollectiveOp::scatter:
            return gather_or_scatter(c, ch, cs);
        }
    }

    void native_barrier(Stream& s) override {
        check(ncclAllReduce(barrier_word_, barrier_word_, 1, ncclFloat32, ncclSum, comm_,
                            cuda::stream_of(s)),
              "ncclAllReduce (barrier)");
    }

  protected:
    void post(Stream& s, const std::vector<Transfer>& transfers) override {
        const cudaStream_t cs = cuda::stream_of(s);
        grouped([&] {
            for (const Transfer& x : transfers)
                check(x.is_send ? ncclSend(x.buf, x.bytes, ncclUint8, x.peer, comm_, cs)
                                : ncclRecv(x.buf, x.bytes, ncclUint8, x.peer, comm_, cs),
                      x.is_send ? "ncclSend" : "ncclRecv");
        });
    }

  private:
    // ncclGroupStart, body's operations, ncclGroupEnd: posted together, so none waits for another.
    // A call refused inside the body throws; the group is closed all the same (NCCL's groups are
    // per thread: left open, every later NCCL call of this thread would join it and never run).
    template <typename Body>
    void grouped(Body&& body) {
        check(ncclGroupStart(), "ncclGroupStart");
        struct Close {
            bool done = false;
            ~Close() {
                if (!done) ncclGroupEnd(); // the body's error is the one reported
            }
        } close;
        body();
        close.done = true;
        check(ncclGroupEnd(), "ncclGroupEnd");
    }

    static ncclDataType_t type_of(DType t) {
        return t == DType::i64    ? ncclInt64
               : t == DType::f32  ? ncclFloat32
               : t == DType::bf16 ? ncclBfloat16
                                  : ncclFloat16;
    }

    static const char* at(const void* p, std::size_t elements, DType t) {
        return static_cast<const char*>(p) + elements * dtype_size(t);
    }

    // Chunks of different sizes: rank j's chunk is broadcast from j (NCCL's all-gather-v idiom).
    void all_gather_uneven(const CollectiveCall& c, const Chunking& ch, cudaStream_t cs) {
        grouped([&] {
            for (int j = 0; j < size_; ++j)
                check(ncclBroadcast(c.send, const_cast<char*>(at(c.recv, ch.offset(j), c.dtype)),
                                    ch.size(j), type_of(c.dtype), j, comm_, cs),
                      "ncclBroadcast");
        });
    }

    // Rank j's chunk is reduced onto j.
    void reduce_scatter_uneven(const CollectiveCall& c, const Chunking& ch, ncclRedOp_t op,
                               cudaStream_t cs) {
        grouped([&] {
            for (int j = 0; j < size_; ++j)
                check(ncclReduce(at(c.send, ch.offset(j), c.dtype), c.recv, ch.size(j),
                                 type_of(c.dtype), op, j, comm_, cs),
                      "ncclReduce");
        });
    }

    // The root exchanges one chunk with every rank; its own chunk is a device copy.
    void gather_or_scatter(const CollectiveCall& c, const Chunking& ch, cudaStream_t cs) {
        const bool gather = c.op == CollectiveOp::gather;
        const std::size_t es = dtype_size(c.dtype);
        if (rank_ == c.root) {
            const void* own_src = gather ? c.send : at(c.send, ch.offset(rank_), c.dtype);
            void* own_dst =
                gather ? const_cast<char*>(at(c.recv, ch.offset(rank_), c.dtype)) : c.recv;
            if (own_src != own_dst)
                cuda::check_cuda(cudaMemcpyAsync(own_dst, own_src, ch.size(rank_) * es,
                                                 cudaMemcpyDeviceToDevice, cs),
                                 "cudaMemcpyAsync");
        }
        grouped([&] {
            for (int j = 0; j < size_; ++j) {
                if (j == c.root || (rank_ != c.root && rank_ != j)) continue;
                const std::size_t bytes = ch.size(j) * es;
                char* chunk =
                    const_cast<char*>(at(gather ? c.recv : c.send, ch.offset(j), c.dtype));
                if (rank_ == c.root)
                    check(gather ? ncclRecv(chunk, bytes, ncclUint8, j, comm_, cs)
                                 : ncclSend(chunk, bytes, ncclUint8, j, comm_, cs),
                          gather ? "ncclRecv" : "ncclSend");
                else
                    check(gather ? ncclSend(c.send, bytes, ncclUint8, c.root, comm_, cs)
                                 : ncclRecv(c.recv, bytes, ncclUint8, c.root, comm_, cs),
                          gather ? "ncclSend" : "ncclRecv");
            }
        });
    }

    // A non-blocking communicator (NCCL_COMM_BLOCKING=0 in the environment) answers
    // ncclInProgress: the call is still being issued and the communicator takes no other until
    // ncclCommGetAsyncError says it is done — which may yet be an error.
    ncclResult_t finish_issue(ncclResult_t r) const {
        while (r == ncclInProgress && comm_) {
            ncclResult_t state = ncclSuccess;
            if (const ncclResult_t q = ncclCommGetAsyncError(comm_, &state); q != ncclSuccess)
                return q;
            r = state;
            if (r == ncclInProgress) std::this_thread::yield();
        }
        return r;
    }

    void check(ncclResult_t r, const char* what) const {
        r = finish_issue(r);
        if (r == ncclSuccess) return;
        std::string detail = comm_ ? ncclGetLastError(comm_) : "";
        throw Error(std::string(what) + " failed: " + ncclGetErrorString(r) +
                    (detail.empty() ? "" : " (" + detail + ")") +
                    "; run with NCCL_DEBUG=WARN for NCCL's own account");
    }

    ncclComm_t comm_ = nullptr;
    int rank_ = 0, size_ = 1;
    void* barrier_word_ = nullptr; // the one float a barrier all-reduces
};
} // namespace

std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm) {
    return std::make_unique<NcclTransport>(comm);
}

} // namespace shardlab
