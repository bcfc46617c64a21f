// Every collective, ring and native, under `mpirun -np K`: every dtype, even and uneven counts,
// count < N and 0, in place and out of place, sum and average, each root. Results are checked
// against a float64 reference each rank computes on its own (it can regenerate every rank's
// inputs), bytes sent against the schedule counted step by step, and — for the ring — the same
// bits on every rank and on every repeat.
#include "comm/chunking.h"
#include "comm/communicator.h"
#include "core/error.h"
#include "model/backend.h"
#include "tests/collective_inputs.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <future>
#include <vector>

using namespace shardlab;

namespace {
const CollectiveOp kOps[] = {CollectiveOp::allgather, CollectiveOp::reduce_scatter,
                             CollectiveOp::allreduce, CollectiveOp::broadcast,
                             CollectiveOp::reduce,    CollectiveOp::gather,
                             CollectiveOp::scatter};
const DType kTypes[] = {DType::f32, DType::bf16, DType::f16};

using testing_inputs::input;

double unit_roundoff(DType t) {
    return t == DType::f32 ? 0x1p-24 : t == DType::bf16 ? 0x1p-8 : 0x1p-11;
}

struct Expected {
    double value;
    double bound; // |result - value| allowed
};

// Bytes this rank sends, counted along each algorithm's schedule (docs/COLLECTIVES.md).
std::uint64_t schedule_bytes(CollectiveOp op, const Chunking& ch, int r, int root, std::size_t es) {
    const int n = ch.n;
    auto c = [&](int j) { return std::uint64_t(ch.size(ring_mod(j, n))) * es; };
    std::uint64_t ag = 0, rs = 0, scatter_root = 0;
    for (int k = 0; k < n - 1; ++k) ag += c(r - k), rs += c(r - k - 1);
    for (int j = 0; j < n; ++j)
        if (j != root) scatter_root += c(j);
    switch (op) {
    case CollectiveOp::allgather:
        return ag;
    case CollectiveOp::reduce_scatter:
        return rs;
    case CollectiveOp::allreduce:
        return rs + ag;
    case CollectiveOp::broadcast:
        return (r == root ? scatter_root : 0) + ag;
    case CollectiveOp::reduce:
        return rs + (r == root ? 0 : c(r));
    case CollectiveOp::gather:
        return r == root ? 0 : c(r);
    case CollectiveOp::scatter:
        return r == root ? scatter_root : 0;
    }
    return 0;
}

class CollectivesTest : public ::testing::Test {
  protected:
    std::unique_ptr<Backend> backend = make_cpu_backend(1);
    std::unique_ptr<Communicator> communicator = backend->communicator(MPI_COMM_WORLD);
    Communicator& comm = *communicator;
    MemoryTracker& tracker = backend->context().tracker();
    int n = comm.size(), r = comm.rank();

    std::vector<std::size_t> counts() const {
        return {0, 1, std::size_t(n) - 1, std::size_t(n), std::size_t(n) + 1, 7, 1000, 1001, 4099};
    }

    // Expected recv element j on this rank.
    Expected expect(const CollectiveCall& c, std::size_t j, bool integers) const {
        const Chunking ch{c.count, n};
        std::size_t global = j;
        if (c.op == CollectiveOp::reduce_scatter || c.op == CollectiveOp::scatter)
            global += ch.offset(r);
        switch (c.op) {
        case CollectiveOp::allgather:
        case CollectiveOp::gather: {
            int owner = 0;
            while (owner + 1 < n && ch.offset(owner + 1) <= global) ++owner;
            return {input(owner, global, c.dtype, integers), 0};
        }
        case CollectiveOp::broadcast:
        case CollectiveOp::scatter:
            return {input(c.root, global, c.dtype, integers), 0};
        default:
            break;
        }
        double sum = 0, abs_sum = 0;
        for (int k = 0; k < n; ++k) {
            double x = input(k, global, c.dtype, integers);
            sum += x;
            abs_sum += std::fabs(x);
        }
        const double nu = n * unit_roundoff(c.dtype);
        double bound = nu / (1 - nu) * abs_sum; // gamma_N: N-1 additions and a final division
        if (c.reduce == ReduceOp::avg) sum /= n, bound /= n;
        return {sum, integers && c.reduce == ReduceOp::sum ? 0.0 : bound};
    }

    // Runs one case and checks everything it promises. Returns this rank's recv bytes.
    std::vector<char> run_case(CollectiveOp op, DType t, std::size_t count, bool in_place,
                               ReduceOp red, Algo algo, int root, bool integers) {
        SCOPED_TRACE(testing::Message()
                     << "rank " << r << "/" << n << " " << op_name(op) << " " << dtype_name(t)
                     << " count " << count << (in_place ? " in-place" : "") << " "
                     << reduce_op_name(red) << " " << algo_name(algo) << " root " << root
                     << (integers ? " integers" : ""));
        const std::size_t es = dtype_size(t);
        const Chunking ch{count, n};
        const CallSizes sz = call_sizes(op, count, n, r, root);
        // One big buffer serves both sides in place; out of place, two separate ones.
        std::vector<char> a((count + 1) * es), b((count + 1) * es);
        for (std::size_t j = 0; j < sz.recv; ++j) store_from_f32(b.data(), t, j, NAN); // poison
        char* send = a.data();
        char* recv = b.data();
        const bool root_side = !op_has_root(op) || r == root;
        if (in_place && root_side) {
            switch (op) {
            case CollectiveOp::allgather:
            case CollectiveOp::gather:
                send = recv + ch.offset(r) * es;
                break;
            case CollectiveOp::reduce_scatter:
            case CollectiveOp::scatter:
                send = a.data(), recv = send + ch.offset(r) * es;
                break;
            default:
                send = recv;
                break;
            }
        }
        const bool chunk_input = op == CollectiveOp::allgather || op == CollectiveOp::gather;
        for (std::size_t j = 0; j < sz.send; ++j)
            store_from_f32(send, t, j,
                           float(input(r, (chunk_input ? ch.offset(r) : 0) + j, t, integers)));
        const std::vector<char> send_before(send, send + sz.send * es);

        CollectiveCall call{op, send, recv, count, t, red, root};
        comm.stats().reset();
        comm.run(call, algo);
        comm.synchronize(); // results are there once the comm stream has run the call

        std::size_t wrong = 0;
        for (std::size_t j = 0; j < sz.recv; ++j) {
            const Expected e = expect(call, j, integers);
            const double got = load_as_f32(recv, t, j);
            if (std::fabs(got - e.value) <= e.bound) continue; // NaN (never written) fails too
            if (++wrong <= 3)
                ADD_FAILURE() << "element " << j << " got " << got << " want " << e.value << " +- "
                              << e.bound;
        }
        EXPECT_EQ(wrong, 0u) << "elements outside the bound";
        if (!(in_place && root_side)) {
            EXPECT_EQ(std::memcmp(send_before.data(), send, send_before.size()), 0)
                << "send buffer modified";
        }
        const std::string key =
            algo == Algo::ring ? op_name(op) : std::string(op_name(op)) + "/native";
        const OpStats st = comm.stats().get(key);
        EXPECT_EQ(st.calls, 1u);
        if (algo == Algo::ring)
            EXPECT_EQ(st.bytes_sent, schedule_bytes(op, ch, r, root, es));
        else
            EXPECT_FALSE(st.bytes_measured);
        return std::vector<char>(recv, recv + sz.recv * es);
    }

    // True on every rank when every rank holds the same bytes.
    bool same_on_all_ranks(const std::vector<char>& bytes) {
        std::vector<char> first = bytes;
        MPI_Bcast(first.data(), int(first.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
        int same = first == bytes ? 1 : 0;
        MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        return same == 1;
    }
};
} // namespace

TEST_F(CollectivesTest, EveryOpDtypeCountAndPlacementAgainstFloat64) {
    for (CollectiveOp op : kOps)
        for (DType t : kTypes)
            for (std::size_t count : counts())
                for (bool in_place : {false, true})
                    for (ReduceOp red : {ReduceOp::sum, ReduceOp::avg}) {
                        if (red == ReduceOp::avg && !op_reduces(op)) continue;
                        for (int root : {0, n - 1}) {
                            if (root != 0 && !op_has_root(op)) continue;
                            for (Algo algo : {Algo::ring, Algo::native})
                                run_case(op, t, count, in_place, red, algo, root, false);
                        }
                    }
}

TEST_F(CollectivesTest, RingIsBitwiseReproducibleAndIdenticalOnAllRanks) {
    for (CollectiveOp op :
         {CollectiveOp::allgather, CollectiveOp::allreduce, CollectiveOp::broadcast})
        for (DType t : kTypes)
            for (std::size_t count : {std::size_t(1001), std::size_t(n) - 1}) {
                auto first = run_case(op, t, count, false, ReduceOp::avg, Algo::ring, 0, false);
                auto again = run_case(op, t, count, true, ReduceOp::avg, Algo::ring, 0, false);
                EXPECT_EQ(first, again) << op_name(op) << " " << dtype_name(t);
                EXPECT_TRUE(same_on_all_ranks(first)) << op_name(op) << " " << dtype_name(t);
            }
}

TEST_F(CollectivesTest, ExactIntegerSumsAreBitwiseEqualToTheReferenceInRingAndNative) {
    for (CollectiveOp op : kOps)
        for (DType t : kTypes)
            for (std::size_t count : {std::size_t(5), std::size_t(4099)}) {
                auto ring = run_case(op, t, count, false, ReduceOp::sum, Algo::ring, n - 1, true);
                auto native =
                    run_case(op, t, count, false, ReduceOp::sum, Algo::native, n - 1, true);
                EXPECT_EQ(ring, native) << op_name(op) << " " << dtype_name(t);
            }
}

TEST_F(CollectivesTest, ReduceScatterThenAllGatherEqualsAllReduceBitwise) {
    // The ZeRO numerics contract: stage 0's all-reduce and stage 1-3's reduce-scatter produce
    // the same bits for every shard.
    for (DType t : kTypes)
        for (ReduceOp red : {ReduceOp::sum, ReduceOp::avg}) {
            const std::size_t count = 3001, es = dtype_size(t);
            const Chunking ch{count, n};
            std::vector<char> in(count * es), all(count * es), shard(ch.max_size() * es + 1),
                gathered(count * es);
            for (std::size_t j = 0; j < count; ++j)
                store_from_f32(in.data(), t, j, float(input(r, j, t, false)));
            comm.all_reduce(in.data(), all.data(), count, t, red);
            comm.reduce_scatter(in.data(), shard.data(), count, t, red);
            comm.all_gather(shard.data(), gathered.data(), count, t);
            comm.synchronize();
            EXPECT_EQ(all, gathered) << dtype_name(t) << " " << reduce_op_name(red);
        }
}

TEST_F(CollectivesTest, EachCallsScratchIsTrackedAsCommBuffersAndReleasedInStreamOrder) {
    std::vector<float> in(4000, 1.0f), out(4000);
    comm.all_reduce(in.data(), out.data(), 4000, DType::f32);
    comm.all_reduce(in.data(), out.data(), 4000, DType::f32);
    // Two reduce-scatter chunks per call, released when the call has been enqueued: the second
    // call reuses the first one's block (same stream), so nothing grows.
    const std::size_t scratch = n > 1 ? 2 * Chunking({4000, n}).max_size() * 4 : 0;
    EXPECT_EQ(tracker.peak(Category::comm_buffers), scratch);
    EXPECT_EQ(tracker.current(Category::comm_buffers), 0u);
    EXPECT_EQ(tracker.allocator(Arena::device).raw_allocations(), n > 1 ? 1u : 0u);
    comm.synchronize();
    EXPECT_EQ(out, std::vector<float>(4000, float(n)));
}

TEST_F(CollectivesTest, CallsReturnBeforeTheCommStreamRunsThem) {
    // The comm stream is held at a gate; a collective enqueued behind it has not happened when
    // the call returns, and has once the stream is released.
    std::promise<void> gate;
    auto opened = gate.get_future().share();
    comm.stream().enqueue([opened] { opened.wait(); });
    std::vector<float> in(64, 2.0f), out(64, 0.0f);
    comm.all_reduce(in.data(), out.data(), 64, DType::f32);
    EXPECT_EQ(out[0], 0.0f);
    gate.set_value();
    comm.synchronize();
    EXPECT_EQ(out[0], 2.0f * float(n));
}

TEST_F(CollectivesTest, RootOutsideTheCommunicatorIsAClearErrorOnEveryRank) {
    std::vector<float> buf(8);
    try {
        comm.broadcast(buf.data(), buf.data(), 8, DType::f32, n);
        FAIL() << "root N must be rejected";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("outside"), std::string::npos) << e.what();
    }
    comm.barrier(); // everyone is still in step: no rank went into the collective
    comm.synchronize();
    EXPECT_EQ(comm.stats().get("barrier").bytes_sent, 0u);
}

TEST_F(CollectivesTest, LargeUnevenBufferCountsExactly) {
    // 8 MiB + 3 elements: multi-megabyte messages, uneven by three; exact integer sums.
    const std::size_t count = (std::size_t(8) << 20) / 4 + 3;
    run_case(CollectiveOp::allreduce, DType::f32, count, false, ReduceOp::sum, Algo::ring, 0, true);
}
