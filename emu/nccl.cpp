// NCCL over MPI for the SIMT emulator (test infrastructure standing in for NCCL: never in a real
// CUDA build). A communicator is an MPI communicator split from MPI_COMM_WORLD by the unique id;
// every operation is a task on its emulated stream (shardlab::emu::enqueue) that reads and writes
// the device buffers when the stream reaches it, as NCCL's kernels do. The calls return at once.
//
// One task runs all the operations a group put on one stream: it posts every piece of every
// operation as a non-blocking MPI call (receives, then sends, then collectives), waits for all of
// them together — polling, so the core is free for the other streams — then finishes the
// reductions. Posting everything before waiting is what lets a ring step's send and receive, or
// two communicators' collectives, progress together as they do in one NCCL group.
//
// Reductions are computed by every rank from all N contributions, in rank order, in fp32 (fp64
// for doubles, the type itself for integers), with avg = sum / N rounded once: so every rank gets
// bitwise the same result, and the same result every run.
#include "emu/include/nccl.h"

#include "core/dtype.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace shardlab::emu::nccl {

// One rank's communicator. Queued tasks share it, so freeing the handle never frees what a task
// still uses: the MPI communicators go with the last owner.
struct CommState {
    MPI_Comm coll = MPI_COMM_NULL; // collectives
    MPI_Comm p2p = MPI_COMM_NULL;  // send/recv: a duplicate, so they never match a collective
    int rank = 0, size = 0;
    std::atomic<bool> aborted{false};
    std::atomic<int> async_error{ncclSuccess};
    // NCCL_COMM_BLOCKING=0 (NCCL's own variable): calls return ncclInProgress, and the
    // communicator takes no other call until ncclCommGetAsyncError has said it is done — here
    // after `issuing` polls, so a caller that treats ncclInProgress as success is refused.
    bool nonblocking = false;
    std::atomic<int> issuing{0};

    CommState(MPI_Comm c, MPI_Comm p, int r, int n) : coll(c), p2p(p), rank(r), size(n) {}
    CommState(const CommState&) = delete;
    CommState& operator=(const CommState&) = delete;
    ~CommState() {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized) return; // the process is ending: MPI freed them
        MPI_Comm_free(&p2p);
        MPI_Comm_free(&coll);
    }
};

} // namespace shardlab::emu::nccl

struct ncclComm {
    std::shared_ptr<shardlab::emu::nccl::CommState> state;
};

namespace shardlab::emu::nccl {
namespace {

constexpr std::size_t kMaxPiece = std::size_t(1) << 30; // under INT_MAX, MPI's count limit
std::atomic<std::size_t> piece_bytes{kMaxPiece};
constexpr int kTag = 0;
constexpr char kMagic[] = "shardlab-emu-nccl"; // at the start of every id this emulator made

thread_local std::string last_error;

ncclResult_t fail(ncclResult_t r, std::string why) {
    last_error = std::move(why);
    return r;
}

std::string mpi_error_string(int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return std::string(msg, std::size_t(len));
}

// --- element types and reductions ----------------------------------------------------------------

std::size_t type_size(ncclDataType_t t) {
    switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
        return 8;
    default:
        return 0;
    }
}

// How each type is read into the type a reduction accumulates in, and written back.
template <typename T>
struct Plain {
    using Acc = T;
    static T load(const char* p, std::size_t i) {
        T v;
        std::memcpy(&v, p + i * sizeof(T), sizeof(T));
        return v;
    }
    static void store(char* p, std::size_t i, T v) {
        std::memcpy(p + i * sizeof(T), &v, sizeof(T));
    }
};
template <float (*Widen)(std::uint16_t), std::uint16_t (*Round)(float)>
struct Half16 { // fp16 and bf16: accumulated in fp32, rounded once
    using Acc = float;
    static float load(const char* p, std::size_t i) {
        return Widen(Plain<std::uint16_t>::load(p, i));
    }
    static void store(char* p, std::size_t i, float v) {
        Plain<std::uint16_t>::store(p, i, Round(v));
    }
};
using F16 = Half16<f16_to_f32, f32_to_f16>;
using BF16 = Half16<bf16_to_f32, f32_to_bf16>;

// Integers wrap (two's complement, as a GPU's adds do) instead of overflowing.
template <typename A>
A add(A a, A b) {
    if constexpr (std::is_integral_v<A>)
        return A(std::make_unsigned_t<A>(a) + std::make_unsigned_t<A>(b));
    else
        return a + b;
}
template <typename A>
A mul(A a, A b) {
    if constexpr (std::is_integral_v<A>)
        return A(std::make_unsigned_t<A>(a) * std::make_unsigned_t<A>(b));
    else
        return a * b;
}
// Floating max/min ignore a NaN as NCCL's (fmaxf / fminf) do.
template <typename A>
A max_of(A a, A b) {
    if constexpr (std::is_integral_v<A>)
        return b > a ? b : a;
    else
        return std::fmax(a, b);
}
template <typename A>
A min_of(A a, A b) {
    if constexpr (std::is_integral_v<A>)
        return b < a ? b : a;
    else
        return std::fmin(a, b);
}
template <typename A>
A divide(A a, int n) {
    if constexpr (std::is_floating_point_v<A>)
        return a / A(n);
    else if constexpr (std::is_signed_v<A>)
        return A(std::int64_t(a) / n); // truncated, as C (and NCCL's integer avg) divide
    else
        return A(std::uint64_t(a) / unsigned(n));
}

// acc[i] = in_0[i] f in_1[i] f ... in rank order: contribution r is at in + r * stride.
template <typename E, typename F>
void fold(const char* in, std::size_t stride, int nranks, std::size_t n, typename E::Acc* acc,
          F f) {
    for (std::size_t i = 0; i < n; ++i) acc[i] = E::load(in, i);
    for (int r = 1; r < nranks; ++r) {
        const char* c = in + std::size_t(r) * stride;
        for (std::size_t i = 0; i < n; ++i) acc[i] = f(acc[i], E::load(c, i));
    }
}

template <typename E>
void reduce_as(const char* in, std::size_t stride, int nranks, std::size_t n, ncclRedOp_t op,
               char* out) {
    using A = typename E::Acc;
    std::vector<A> acc(n);
    if (op == ncclSum || op == ncclAvg)
        fold<E>(in, stride, nranks, n, acc.data(), [](A a, A b) { return add(a, b); });
    else if (op == ncclProd)
        fold<E>(in, stride, nranks, n, acc.data(), [](A a, A b) { return mul(a, b); });
    else if (op == ncclMax)
        fold<E>(in, stride, nranks, n, acc.data(), [](A a, A b) { return max_of(a, b); });
    else
        fold<E>(in, stride, nranks, n, acc.data(), [](A a, A b) { return min_of(a, b); });
    for (std::size_t i = 0; i < n; ++i)
        E::store(out, i, op == ncclAvg ? divide(acc[i], nranks) : acc[i]);
}

// Reduces n elements of each of nranks contributions (rank r's at in + r * stride) into out.
void reduce(const char* in, std::size_t stride, int nranks, std::size_t n, ncclDataType_t t,
            ncclRedOp_t op, char* out) {
    switch (t) {
    case ncclInt8:
        return reduce_as<Plain<std::int8_t>>(in, stride, nranks, n, op, out);
    case ncclUint8:
        return reduce_as<Plain<std::uint8_t>>(in, stride, nranks, n, op, out);
    case ncclInt32:
        return reduce_as<Plain<std::int32_t>>(in, stride, nranks, n, op, out);
    case ncclUint32:
        return reduce_as<Plain<std::uint32_t>>(in, stride, nranks, n, op, out);
    case ncclInt64:
        return reduce_as<Plain<std::int64_t>>(in, stride, nranks, n, op, out);
    case ncclUint64:
        return reduce_as<Plain<std::uint64_t>>(in, stride, nranks, n, op, out);
    case ncclFloat16:
        return reduce_as<F16>(in, stride, nranks, n, op, out);
    case ncclFloat32:
        return reduce_as<Plain<float>>(in, stride, nranks, n, op, out);
    case ncclFloat64:
        return reduce_as<Plain<double>>(in, stride, nranks, n, op, out);
    case ncclBfloat16:
        return reduce_as<BF16>(in, stride, nranks, n, op, out);
    default: // refused when the call was made
        throw std::logic_error("NCCL emulator: no reduction for datatype " + std::to_string(t));
    }
}

// --- operations
// ------------------------------------------------------------------------------------

enum class Kind { send, recv, all_reduce, reduce_scatter, all_gather, broadcast, reduce };

// One call, as recorded: what the task needs to run it. count is in elements: the message for
// send/recv, one rank's block for reduce-scatter (recvcount) and all-gather (sendcount).
struct Op {
    Kind kind;
    const char* name; // the NCCL call, for messages
    std::shared_ptr<CommState> comm;
    cudaStream_t stream;
    const char* send;
    char* recv;
    std::size_t count;
    ncclDataType_t type;
    ncclRedOp_t redop;
    int peer;          // send/recv: the peer; broadcast/reduce: the root
    std::size_t piece; // elements per MPI message (set at call time, so every rank cuts alike)
};

bool is_p2p(Kind k) {
    return k == Kind::send || k == Kind::recv;
}

// Memory MPI may still use after the task gave up on it (a collective MPI cannot cancel): kept
// until the process ends rather than freed under MPI.
void keep_forever(std::unique_ptr<char[]> p) {
    static std::mutex mutex;
    static std::vector<std::unique_ptr<char[]>> kept;
    std::lock_guard<std::mutex> lock(mutex);
    kept.push_back(std::move(p));
}

// One piece of one operation: its MPI request's host memory and what to do once every request of
// the task has completed.
struct Unit {
    std::size_t op;       // index in the task's operations
    const char* mpi_call; // for messages
    std::unique_ptr<char[]> staging;
    std::function<void()> finish;
};

// The operations of one group on one stream, run as one stream task.
class Task {
  public:
    explicit Task(const std::vector<Op>& ops) : ops_(ops), dropped_(ops.size(), false) {}
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;
    ~Task() { // on failure: leave nothing MPI could still write into after the task is gone
        for (std::size_t k = 0; k < reqs_.size(); ++k) abandon(k);
    }

    void run() {
        post_all();
        wait();
        for (Unit& u : units_)
            if (!dropped_[u.op] && u.finish) u.finish();
    }

  private:
    const std::vector<Op>& ops_;
    std::vector<bool> dropped_; // by operation: its communicator was aborted
    std::deque<Unit> units_;    // a deque: Unit& stay valid as units are added
    std::vector<MPI_Request> reqs_;
    std::vector<Unit*> req_unit_;

    bool skipped(std::size_t i) {
        if (ops_[i].comm->aborted.load()) dropped_[i] = true;
        return dropped_[i];
    }

    // Receives first, then sends: a peer's send always finds its receive posted. Collectives
    // are posted in the order they were called, as MPI matches them.
    void post_all() {
        for (Kind k : {Kind::recv, Kind::send})
            for (std::size_t i = 0; i < ops_.size(); ++i)
                if (ops_[i].kind == k && !skipped(i)) post_p2p(i);
        for (std::size_t i = 0; i < ops_.size(); ++i)
            if (!is_p2p(ops_[i].kind) && !skipped(i)) post_collective(i);
    }

    Unit& unit(std::size_t op, const char* call, std::size_t staging_bytes = 0) {
        Unit& u = units_.emplace_back(Unit{op, call, nullptr, {}});
        if (staging_bytes) u.staging = std::make_unique<char[]>(staging_bytes);
        return u;
    }

    // A new request slot for u, for the MPI call to fill (MPI_REQUEST_NULL if the call fails).
    MPI_Request* request(Unit& u) {
        reqs_.push_back(MPI_REQUEST_NULL);
        req_unit_.push_back(&u);
        return &reqs_.back();
    }

    void check(const Unit& u, int rc) {
        if (rc != MPI_SUCCESS) failed(u, rc, ncclSystemError);
    }

    [[noreturn]] void failed(const Unit& u, int rc, ncclResult_t kind) {
        const Op& o = ops_[u.op];
        o.comm->async_error.store(kind);
        throw std::runtime_error(std::string(o.name) + ": " + u.mpi_call +
                                 " failed: " + mpi_error_string(rc));
    }

    // Both sides cut a message alike, and MPI matches one pair's messages in order.
    void post_p2p(std::size_t i) {
        const Op& o = ops_[i];
        const std::size_t es = type_size(o.type), total = o.count * es, piece = o.piece * es;
        for (std::size_t off = 0; off < total; off += piece) {
            const int n = int(std::min(piece, total - off));
            if (o.kind == Kind::send) {
                Unit& u = unit(i, "MPI_Isend");
                check(u,
                      MPI_Isend(o.send + off, n, MPI_BYTE, o.peer, kTag, o.comm->p2p, request(u)));
            } else {
                Unit& u = unit(i, "MPI_Irecv");
                check(u,
                      MPI_Irecv(o.recv + off, n, MPI_BYTE, o.peer, kTag, o.comm->p2p, request(u)));
            }
        }
    }

    // A collective is cut along one rank's block: piece [off, off + n) of every block at once.
    void post_collective(std::size_t i) {
        const Op& o = ops_[i];
        for (std::size_t off = 0; off < o.count; off += o.piece) {
            const std::size_t n = std::min(o.piece, o.count - off);
            switch (o.kind) {
            case Kind::all_reduce:
                all_reduce_piece(i, off, n);
                break;
            case Kind::reduce_scatter:
                reduce_scatter_piece(i, off, n);
                break;
            case Kind::all_gather:
                all_gather_piece(i, off, n);
                break;
            case Kind::broadcast:
                broadcast_piece(i, off, n);
                break;
            default:
                reduce_piece(i, off, n);
                break;
            }
        }
    }

    // Every rank's piece [off, off + n) side by side in the unit's staging memory.
    Unit& gather_piece(std::size_t i, std::size_t off, std::size_t n) {
        const Op& o = ops_[i];
        const std::size_t es = type_size(o.type), bytes = n * es;
        Unit& u = unit(i, "MPI_Iallgather", bytes * std::size_t(o.comm->size));
        check(u, MPI_Iallgather(o.send + off * es, int(bytes), MPI_BYTE, u.staging.get(),
                                int(bytes), MPI_BYTE, o.comm->coll, request(u)));
        return u;
    }

    // Every rank gathers all contributions and reduces them itself, in rank order.
    void all_reduce_piece(std::size_t i, std::size_t off, std::size_t n) {
        const Op& o = ops_[i];
        Unit& u = gather_piece(i, off, n);
        u.finish = [&o, all = u.staging.get(), off, n] {
            const std::size_t es = type_size(o.type);
            reduce(all, n * es, o.comm->size, n, o.type, o.redop, o.recv + off * es);
        };
    }

    // Staged rather than received in place: in place, the send block is inside recvbuff.
    void all_gather_piece(std::size_t i, std::size_t off, std::size_t n) {
        const Op& o = ops_[i];
        Unit& u = gather_piece(i, off, n);
        u.finish = [&o, all = u.staging.get(), off, n] {
            const std::size_t es = type_size(o.type), bytes = n * es;
            for (std::size_t j = 0; j < std::size_t(o.comm->size); ++j)
                std::memcpy(o.recv + (j * o.count + off) * es, all + j * bytes, bytes);
        };
    }

    // Block j's piece goes to rank j (MPI_Ialltoall), which reduces what it got in rank order.
    void reduce_scatter_piece(std::size_t i, std::size_t off, std::size_t n) {
        const Op& o = ops_[i];
        const std::size_t es = type_size(o.type), bytes = n * es, size = std::size_t(o.comm->size);
        const bool whole = n == o.count; // then the blocks are the send buffer as it is
        Unit& u = unit(i, "MPI_Ialltoall", bytes * size * (whole ? 1 : 2));
        char* got = u.staging.get();
        const char* out = o.send;
        if (!whole) { // put each block's piece next to the others'
            char* staged = got + bytes * size;
            for (std::size_t j = 0; j < size; ++j)
                std::memcpy(staged + j * bytes, o.send + (j * o.count + off) * es, bytes);
            out = staged;
        }
        check(u, MPI_Ialltoall(out, int(bytes), MPI_BYTE, got, int(bytes), MPI_BYTE, o.comm->coll,
                               request(u)));
        u.finish = [&o, got, off, n, es] {
            reduce(got, n * es, o.comm->size, n, o.type, o.redop, o.recv + off * es);
        };
    }

    void broadcast_piece(std::size_t i, std::size_t off, std::size_t n) {
        const Op& o = ops_[i];
        const std::size_t es = type_size(o.type), bytes = n * es;
        const bool root = o.comm->rank == o.peer;
        // MPI only reads the root's buffer, so the root's sendbuff is the one to hand it.
        char* buf = root ? const_cast<char*>(o.send) + off * es : o.recv + off * es;
        Unit& u = unit(i, "MPI_Ibcast");
        check(u, MPI_Ibcast(buf, int(bytes), MPI_BYTE, o.peer, o.comm->coll, request(u)));
        if (root && o.send != o.recv)
            u.finish = [&o, off, es, bytes] {
                std::memmove(o.recv + off * es, o.send + off * es, bytes);
            };
    }

    void reduce_piece(std::size_t i, std::size_t off, std::size_t n) {
        const Op& o = ops_[i];
        const std::size_t es = type_size(o.type), bytes = n * es;
        const bool root = o.comm->rank == o.peer;
        Unit& u = unit(i, "MPI_Igather", root ? bytes * std::size_t(o.comm->size) : 0);
        char* all = u.staging.get();
        check(u, MPI_Igather(o.send + off * es, int(bytes), MPI_BYTE, all, int(bytes), MPI_BYTE,
                             o.peer, o.comm->coll, request(u)));
        if (root)
            u.finish = [&o, all, off, n, es] {
                reduce(all, n * es, o.comm->size, n, o.type, o.redop, o.recv + off * es);
            };
    }

    // Polls rather than blocks (MPI_Waitall spins, and the other streams' threads need the cores),
    // and between polls lets go of the operations whose communicator was aborted.
    void wait() {
        std::vector<int> done(reqs_.size());
        std::vector<MPI_Status> status(reqs_.size());
        while (!reqs_.empty()) {
            drop_aborted();
            int n = 0;
            const int rc =
                MPI_Testsome(int(reqs_.size()), reqs_.data(), &n, done.data(), status.data());
            if (rc == MPI_ERR_IN_STATUS) {
                for (int j = 0; j < n; ++j)
                    if (status[j].MPI_ERROR != MPI_SUCCESS &&
                        status[j].MPI_ERROR != MPI_ERR_PENDING)
                        failed(*req_unit_[done[j]], status[j].MPI_ERROR, ncclRemoteError);
            } else if (rc != MPI_SUCCESS) {
                failed(*req_unit_.front(), rc, ncclSystemError);
            }
            if (n == MPI_UNDEFINED) return; // no request left active
            if (n == 0) std::this_thread::yield();
        }
    }

    void drop_aborted() {
        for (std::size_t i = 0; i < ops_.size(); ++i) {
            if (dropped_[i] || !ops_[i].comm->aborted.load()) continue;
            dropped_[i] = true;
            for (std::size_t k = 0; k < reqs_.size(); ++k)
                if (req_unit_[k]->op == i) abandon(k);
        }
    }

    // Stops waiting for request k: a receive not yet matched is cancelled; a send is left to MPI
    // to finish; a collective (which MPI cannot cancel) keeps its staging memory for good.
    void abandon(std::size_t k) {
        MPI_Request& r = reqs_[k];
        if (r == MPI_REQUEST_NULL) return;
        Unit& u = *req_unit_[k];
        const Kind kind = ops_[u.op].kind;
        if (kind == Kind::recv) MPI_Cancel(&r);
        if (is_p2p(kind)) {
            MPI_Request_free(&r);
        } else {
            if (u.staging) keep_forever(std::move(u.staging));
            r = MPI_REQUEST_NULL;
        }
    }
};

// --- groups
// ----------------------------------------------------------------------------------------

// A thread's open group: NCCL's groups are per thread.
struct Group {
    int depth = 0;
    std::vector<Op> ops;
    ncclResult_t error = ncclSuccess; // the first call inside it that was refused
    std::string why;
};
thread_local Group group;

// One task per stream, in the order the streams first appear; each runs that stream's operations.
void launch(std::vector<Op> ops) {
    std::vector<std::pair<cudaStream_t, std::vector<Op>>> by_stream;
    for (Op& o : ops) {
        auto it = std::find_if(by_stream.begin(), by_stream.end(),
                               [&](const auto& s) { return s.first == o.stream; });
        if (it == by_stream.end()) it = by_stream.insert(by_stream.end(), {o.stream, {}});
        it->second.push_back(std::move(o));
    }
    for (auto& [stream, batch] : by_stream)
        enqueue(stream, [batch = std::move(batch)] { Task(batch).run(); });
}

// SHARDLAB_EMU_NCCL_FAIL=CALL (e.g. ncclSend): every such call fails with ncclSystemError, as an
// NCCL whose network broke would — how tests reach the backend's handling of an NCCL error.
bool injected_failure(const char* call) {
    static const char* const env = std::getenv("SHARDLAB_EMU_NCCL_FAIL");
    return env && std::strcmp(env, call) == 0;
}

// A non-blocking communicator's call is issued in the background: ncclInProgress, and the next
// two polls of ncclCommGetAsyncError say so too.
ncclResult_t issued(CommState& c) {
    if (!c.nonblocking) return ncclSuccess;
    c.issuing.store(2);
    return ncclInProgress;
}

ncclResult_t submit(Op op) {
    if (injected_failure(op.name)) {
        const std::string why =
            std::string(op.name) + ": a network failure injected by SHARDLAB_EMU_NCCL_FAIL";
        if (group.depth > 0 && group.error == ncclSuccess) {
            group.error = ncclSystemError;
            group.why = why;
        }
        return fail(ncclSystemError, why);
    }
    if (group.depth == 0) {
        CommState& c = *op.comm;
        launch({std::move(op)});
        return issued(c);
    }
    group.ops.push_back(std::move(op));
    return ncclSuccess;
}

// A refused call: inside a group, the group is refused too (ncclGroupEnd reports it and runs
// nothing), as NCCL does.
ncclResult_t refuse(const std::string& why) {
    if (group.depth > 0 && group.error == ncclSuccess) {
        group.error = ncclInvalidArgument;
        group.why = why;
    }
    return fail(ncclInvalidArgument, why);
}

// --- argument checks
// ------------------------------------------------------------------------------

bool is_device_memory(const void* p) {
    cudaPointerAttributes a;
    return cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type != cudaMemoryTypeUnregistered;
}

// "" when buf can hold the operation's data; else why not.
std::string check_buffer(const char* call, const char* what, const void* buf, std::size_t count) {
    if (count == 0) return "";
    if (!buf) return std::string(call) + ": " + what + " is NULL";
    // NCCL would fault on the GPU; the emulator says so when the call is made.
    if (!is_device_memory(buf))
        return std::string(call) + ": " + what +
               " is pageable host memory, not device memory (cudaMalloc) or pinned host memory";
    return "";
}

// Checks what every operation has; "" when fine.
std::string check_common(const char* call, ncclComm_t comm, ncclDataType_t t, std::size_t count,
                         std::size_t blocks) {
    if (!comm) return std::string(call) + ": comm is NULL";
    if (comm->state->issuing.load() > 0)
        return std::string(call) + ": the last call on this non-blocking communicator is still "
                                   "in progress (poll ncclCommGetAsyncError until it is done)";
    const std::size_t es = type_size(t);
    if (es == 0) return std::string(call) + ": unknown datatype " + std::to_string(int(t));
    if (count > SIZE_MAX / es / blocks)
        return std::string(call) + ": count " + std::to_string(count) + " is too large";
    return "";
}

std::string check_redop(const char* call, ncclDataType_t t, ncclRedOp_t op) {
    if (op < ncclSum || op >= ncclNumOps)
        return std::string(call) + ": unsupported reduction op " + std::to_string(int(op)) +
               " (the emulator has ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg)";
    if (t == ncclFloat8e4m3 || t == ncclFloat8e5m2)
        return std::string(call) + ": the emulator does not reduce fp8 data";
    return "";
}

std::string check_rank(const char* call, const char* what, int r, ncclComm_t comm) {
    if (r < 0 || r >= comm->state->size)
        return std::string(call) + ": " + what + " " + std::to_string(r) + " is not a rank of a " +
               std::to_string(comm->state->size) + "-rank communicator";
    return "";
}

std::size_t piece_elements(ncclDataType_t t) {
    return std::max<std::size_t>(1, piece_bytes.load() / type_size(t));
}

Op make_op(Kind kind, const char* name, ncclComm_t comm, cudaStream_t s, const void* send,
           void* recv, std::size_t count, ncclDataType_t t, ncclRedOp_t op, int peer) {
    return Op{kind,
              name,
              comm->state,
              s,
              static_cast<const char*>(send),
              static_cast<char*>(recv),
              count,
              t,
              op,
              peer,
              piece_elements(t)};
}

// The first of the checks that failed, or "".
std::string first(std::initializer_list<std::function<std::string()>> checks) {
    for (const auto& c : checks)
        if (std::string why = c(); !why.empty()) return why;
    return "";
}

// --- communicator creation
// ------------------------------------------------------------------------

// The split's color: a non-negative int from the id's bytes (FNV-1a).
int color_of(const ncclUniqueId& id) {
    std::uint64_t h = 1469598103934665603ull;
    for (char c : id.internal) h = (h ^ std::uint8_t(c)) * 1099511628211ull;
    return int((h ^ (h >> 32)) & 0x7fffffffu);
}

std::string check_init(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank) {
    if (!comm) return "ncclCommInitRank: comm is NULL";
    if (nranks < 1) return "ncclCommInitRank: nranks " + std::to_string(nranks) + " is below 1";
    if (rank < 0 || rank >= nranks)
        return "ncclCommInitRank: rank " + std::to_string(rank) + " is outside [0, " +
               std::to_string(nranks) + ")";
    if (std::memcmp(id.internal, kMagic, sizeof(kMagic)) != 0)
        return "ncclCommInitRank: the id was not made by ncclGetUniqueId";
    return "";
}

std::string mpi_not_ready() {
    int initialized = 0, finalized = 0, level = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return "ncclCommInitRank: MPI is not running; the NCCL emulator runs over MPI: call "
               "MPI_Init_thread(MPI_THREAD_MULTIPLE) first";
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE)
        return "ncclCommInitRank: MPI was initialised without MPI_THREAD_MULTIPLE; the NCCL "
               "emulator calls MPI from the streams' threads";
    return "";
}

// The members agree: each has the rank it asked for in a communicator of the size it asked for.
// Agreed over the new communicator, so that all its members fail alike rather than some hang.
std::string check_members(MPI_Comm split, int nranks, int rank) {
    int size = 0, got = 0;
    MPI_Comm_size(split, &size);
    MPI_Comm_rank(split, &got);
    const bool mine = size == nranks && got == rank;
    int all = mine;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, split);
    if (!mine)
        return "ncclCommInitRank: " + std::to_string(size) +
               " processes called it with this id, and this one is number " + std::to_string(got) +
               " by rank, but it passed nranks " + std::to_string(nranks) + " and rank " +
               std::to_string(rank) +
               " (each member passes the same nranks and its own rank; the emulator needs every "
               "process of MPI_COMM_WORLD to call ncclCommInitRank at the same point)";
    if (!all)
        return "ncclCommInitRank: another member of this communicator passed an nranks or rank "
               "that does not match the processes that called it with this id";
    return "";
}

ncclResult_t open_comm(MPI_Comm split, int nranks, int rank, ncclComm_t* comm) {
    MPI_Comm p2p = MPI_COMM_NULL;
    if (MPI_Comm_dup(split, &p2p) != MPI_SUCCESS) {
        MPI_Comm_free(&split);
        return fail(ncclSystemError, "ncclCommInitRank: MPI_Comm_dup failed");
    }
    // A failure inside a task is reported (and becomes the device's error) rather than ending MPI.
    MPI_Comm_set_errhandler(split, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(p2p, MPI_ERRORS_RETURN);
    *comm = new ncclComm{std::make_shared<CommState>(split, p2p, rank, nranks)};
    const char* blocking = std::getenv("NCCL_COMM_BLOCKING");
    (*comm)->state->nonblocking = blocking && std::strcmp(blocking, "0") == 0;
    return issued(*(*comm)->state);
}

} // namespace
} // namespace shardlab::emu::nccl

using namespace shardlab::emu::nccl;
using shardlab::emu::nccl::Kind;

void shardlab::emu::nccl_set_piece_bytes(std::size_t bytes) {
    piece_bytes.store(std::clamp<std::size_t>(bytes, 1, kMaxPiece));
}

// --- library and communicators
// ----------------------------------------------------------------------

ncclResult_t ncclGetVersion(int* version) {
    if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
    if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    std::random_device rd;
    std::memcpy(id->internal, kMagic, sizeof(kMagic));
    for (std::size_t i = sizeof(kMagic); i < NCCL_UNIQUE_ID_BYTES; ++i)
        id->internal[i] = char(rd() & 0xffu);
    return ncclSuccess;
}

// Collective over MPI_COMM_WORLD (MPI_Comm_split): a process whose arguments are wrong still takes
// part (with no color), so that the others find it missing and fail too instead of hanging.
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
    if (std::string why = mpi_not_ready(); !why.empty()) return fail(ncclInvalidUsage, why);
    const std::string why = check_init(comm, nranks, id, rank);
    MPI_Comm split = MPI_COMM_NULL;
    const int rc =
        MPI_Comm_split(MPI_COMM_WORLD, why.empty() ? color_of(id) : MPI_UNDEFINED, rank, &split);
    if (rc != MPI_SUCCESS)
        return fail(ncclSystemError,
                    "ncclCommInitRank: MPI_Comm_split failed: " + mpi_error_string(rc));
    if (!why.empty()) return fail(ncclInvalidArgument, why);
    if (std::string bad = check_members(split, nranks, rank); !bad.empty()) {
        MPI_Comm_free(&split);
        return fail(ncclInvalidArgument, bad);
    }
    return open_comm(split, nranks, rank, comm);
}

// The caller has synchronised the streams that used comm. A task still queued keeps the
// communicator alive until it has run.
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (!comm) return fail(ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
    delete comm;
    return ncclSuccess;
}

// Tasks not yet started skip this communicator's operations; a running one stops waiting for
// them. The MPI communicators are freed now, or when that task lets go.
ncclResult_t ncclCommAbort(ncclComm_t comm) {
    if (!comm) return ncclSuccess; // NCCL accepts a NULL comm here
    comm->state->aborted.store(true);
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
    if (!comm || !count) return fail(ncclInvalidArgument, "ncclCommCount: comm or count is NULL");
    *count = comm->state->size;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
    if (!comm || !rank) return fail(ncclInvalidArgument, "ncclCommUserRank: comm or rank is NULL");
    *rank = comm->state->rank;
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
    if (!comm || !asyncError)
        return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm or asyncError is NULL");
    if (int left = comm->state->issuing.load(); left > 0) {
        comm->state->issuing.store(left - 1);
        *asyncError = ncclInProgress;
        return ncclSuccess;
    }
    *asyncError = ncclResult_t(comm->state->async_error.load());
    return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error";
    case ncclSystemError:
        return "unhandled system error";
    case ncclInternalError:
        return "internal error";
    case ncclInvalidArgument:
        return "invalid argument";
    case ncclInvalidUsage:
        return "invalid usage";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

const char* ncclGetLastError(ncclComm_t) {
    return last_error.c_str();
}

// --- groups and point-to-point
// --------------------------------------------------------------------

ncclResult_t ncclGroupStart() {
    ++group.depth;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
    if (group.depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart to end");
    if (--group.depth > 0) return ncclSuccess;
    std::vector<Op> ops = std::exchange(group.ops, {});
    const ncclResult_t error = std::exchange(group.error, ncclSuccess);
    if (error != ncclSuccess) return fail(error, "ncclGroupEnd: nothing was run: " + group.why);
    std::vector<std::shared_ptr<CommState>> comms;
    for (const Op& o : ops) comms.push_back(o.comm);
    launch(std::move(ops));
    ncclResult_t r = ncclSuccess;
    for (const auto& c : comms)
        if (issued(*c) == ncclInProgress) r = ncclInProgress;
    return r;
}

ncclResult_t ncclSend(const void* sendbuff, std::size_t count, ncclDataType_t t, int peer,
                      ncclComm_t comm, cudaStream_t s) {
    const char* call = "ncclSend";
    const std::string why =
        first({[&] { return check_common(call, comm, t, count, 1); },
               [&] { return check_rank(call, "peer", peer, comm); },
               [&] { return check_buffer(call, "sendbuff", sendbuff, count); }});
    if (!why.empty()) return refuse(why);
    return submit(make_op(Kind::send, call, comm, s, sendbuff, nullptr, count, t, ncclSum, peer));
}

ncclResult_t ncclRecv(void* recvbuff, std::size_t count, ncclDataType_t t, int peer,
                      ncclComm_t comm, cudaStream_t s) {
    const char* call = "ncclRecv";
    const std::string why =
        first({[&] { return check_common(call, comm, t, count, 1); },
               [&] { return check_rank(call, "peer", peer, comm); },
               [&] { return check_buffer(call, "recvbuff", recvbuff, count); }});
    if (!why.empty()) return refuse(why);
    return submit(make_op(Kind::recv, call, comm, s, nullptr, recvbuff, count, t, ncclSum, peer));
}

// --- collectives
// ------------------------------------------------------------------------------------

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, std::size_t count,
                           ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, cudaStream_t s) {
    const char* call = "ncclAllReduce";
    const std::string why =
        first({[&] { return check_common(call, comm, t, count, 1); },
               [&] { return check_redop(call, t, op); },
               [&] { return check_buffer(call, "sendbuff", sendbuff, count); },
               [&] { return check_buffer(call, "recvbuff", recvbuff, count); }});
    if (!why.empty()) return refuse(why);
    return submit(make_op(Kind::all_reduce, call, comm, s, sendbuff, recvbuff, count, t, op, 0));
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, std::size_t recvcount,
                               ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, cudaStream_t s) {
    const char* call = "ncclReduceScatter";
    const std::size_t n = comm ? std::size_t(comm->state->size) : 1;
    const std::string why =
        first({[&] { return check_common(call, comm, t, recvcount, n); },
               [&] { return check_redop(call, t, op); },
               [&] { return check_buffer(call, "sendbuff", sendbuff, recvcount); },
               [&] { return check_buffer(call, "recvbuff", recvbuff, recvcount); }});
    if (!why.empty()) return refuse(why);
    return submit(
        make_op(Kind::reduce_scatter, call, comm, s, sendbuff, recvbuff, recvcount, t, op, 0));
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, std::size_t sendcount,
                           ncclDataType_t t, ncclComm_t comm, cudaStream_t s) {
    const char* call = "ncclAllGather";
    const std::size_t n = comm ? std::size_t(comm->state->size) : 1;
    const std::string why =
        first({[&] { return check_common(call, comm, t, sendcount, n); },
               [&] { return check_buffer(call, "sendbuff", sendbuff, sendcount); },
               [&] { return check_buffer(call, "recvbuff", recvbuff, sendcount); }});
    if (!why.empty()) return refuse(why);
    return submit(
        make_op(Kind::all_gather, call, comm, s, sendbuff, recvbuff, sendcount, t, ncclSum, 0));
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, std::size_t count,
                           ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t s) {
    const char* call = "ncclBroadcast";
    const std::string why =
        first({[&] { return check_common(call, comm, t, count, 1); },
               [&] { return check_rank(call, "root", root, comm); },
               [&] {
                   return comm->state->rank == root
                              ? check_buffer(call, "sendbuff", sendbuff, count)
                              : "";
               },
               [&] { return check_buffer(call, "recvbuff", recvbuff, count); }});
    if (!why.empty()) return refuse(why);
    return submit(
        make_op(Kind::broadcast, call, comm, s, sendbuff, recvbuff, count, t, ncclSum, root));
}

ncclResult_t ncclBcast(void* buff, std::size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                       cudaStream_t s) {
    return ncclBroadcast(buff, buff, count, t, root, comm, s);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, std::size_t count, ncclDataType_t t,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s) {
    const char* call = "ncclReduce";
    const std::string why = first({[&] { return check_common(call, comm, t, count, 1); },
                                   [&] { return check_redop(call, t, op); },
                                   [&] { return check_rank(call, "root", root, comm); },
                                   [&] { return check_buffer(call, "sendbuff", sendbuff, count); },
                                   [&] {
                                       return comm->state->rank == root
                                                  ? check_buffer(call, "recvbuff", recvbuff, count)
                                                  : "";
                                   }});
    if (!why.empty()) return refuse(why);
    return submit(make_op(Kind::reduce, call, comm, s, sendbuff, recvbuff, count, t, op, root));
}
