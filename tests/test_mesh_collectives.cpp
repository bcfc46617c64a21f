// The rank mesh and the non-ring algorithms under `mpirun -np K` (K = 1..6): halving-doubling
// all-reduce and the two-level all-gather / reduce-scatter / all-reduce on every layout the
// world can take (nodes of K consecutive ranks for every K dividing N, and an interleaved layout
// that forces the two-level algorithms to pack), every dtype, even and uneven counts, in and out
// of place, sum and average. Each result is checked against a float64 reference this rank
// computes alone; exact integer sums must equal the plain ring's bitwise; every rank must hold the
// same bits; and the bytes the transport measured must equal comm_model's prediction per link
// class. The process groups are checked by what an all-reduce over each of them returns.
#include "comm/algorithm_table.h"
#include "comm/chunking.h"
#include "comm/comm_model.h"
#include "comm/communicator.h"
#include "comm/process_groups.h"
#include "core/error.h"
#include "model/backend.h"
#include "tests/collective_inputs.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace shardlab;

namespace {
const DType kTypes[] = {DType::f32, DType::bf16, DType::f16};

using testing_inputs::input;

double unit_roundoff(DType t) {
    return t == DType::f32 ? 0x1p-24 : t == DType::bf16 ? 0x1p-8 : 0x1p-11;
}

// Every layout of n ranks worth testing: blocks of K for each K dividing n, and (n even, n > 2)
// the interleaved one, node = rank % 2, whose nodes are not blocks of consecutive ranks.
std::vector<NodeLayout> layouts(int n) {
    std::vector<NodeLayout> out;
    for (int k = 1; k <= n; ++k)
        if (n % k == 0) out.push_back(NodeLayout::blocks(n, k));
    if (n % 2 == 0 && n > 2) {
        std::vector<int> node(n);
        for (int r = 0; r < n; ++r) node[r] = r % 2;
        out.push_back(NodeLayout(node));
    }
    return out;
}

class MeshTest : public ::testing::Test {
  protected:
    std::unique_ptr<Backend> backend = make_cpu_backend(1);
    std::unique_ptr<Communicator> communicator = backend->communicator(MPI_COMM_WORLD);
    Communicator& comm = *communicator;
    int n = comm.size(), r = comm.rank();

    std::vector<std::size_t> counts() const {
        return {0, 1, std::size_t(n) - 1, std::size_t(n), std::size_t(n) + 1, 7, 1000, 1001, 4099};
    }

    // Runs one call and checks its values, its send buffer and its bytes. Returns recv.
    std::vector<char> run_case(CollectiveOp op, Algo algo, DType t, std::size_t count,
                               bool in_place, ReduceOp red, bool integers) {
        SCOPED_TRACE(testing::Message()
                     << "rank " << r << "/" << n << " (" << comm.node_layout().describe() << ") "
                     << op_name(op) << "/" << algo_name(algo) << " " << dtype_name(t) << " count "
                     << count << (in_place ? " in-place" : "") << " " << reduce_op_name(red)
                     << (integers ? " integers" : ""));
        const std::size_t es = dtype_size(t);
        const Chunking ch{count, n};
        const CallSizes sz = call_sizes(op, count, n, r, 0);
        std::vector<char> a((count + 1) * es), b((count + 1) * es);
        for (std::size_t j = 0; j < sz.recv; ++j) store_from_f32(b.data(), t, j, NAN);
        char* send = a.data();
        char* recv = b.data();
        if (in_place) {
            if (op == CollectiveOp::allgather)
                send = recv + ch.offset(r) * es;
            else if (op == CollectiveOp::reduce_scatter)
                recv = send + ch.offset(r) * es;
            else
                send = recv;
        }
        const std::size_t first = op == CollectiveOp::allgather ? ch.offset(r) : 0;
        for (std::size_t j = 0; j < sz.send; ++j)
            store_from_f32(send, t, j, float(input(r, first + j, t, integers)));
        const std::vector<char> send_before(send, send + sz.send * es);

        comm.stats().reset();
        comm.run({op, send, recv, count, t, red, 0}, algo);
        comm.synchronize();

        std::size_t wrong = 0;
        const std::size_t base = op == CollectiveOp::reduce_scatter ? ch.offset(r) : 0;
        for (std::size_t j = 0; j < sz.recv; ++j) {
            const std::size_t g = base + j;
            double want = 0, bound = 0;
            if (op == CollectiveOp::allgather) {
                int owner = 0;
                while (owner + 1 < n && ch.offset(owner + 1) <= g) ++owner;
                want = input(owner, g, t, integers);
            } else {
                double abs_sum = 0;
                for (int k = 0; k < n; ++k) {
                    want += input(k, g, t, integers);
                    abs_sum += std::fabs(input(k, g, t, integers));
                }
                // gamma_N: each element is N-1 additions and a division, each rounded once in
                // fp32 and (16-bit) once more on every store of a partial sum — whatever the
                // order, at most N roundings of relative size u each.
                const double nu = n * unit_roundoff(t);
                bound = nu / (1 - nu) * abs_sum;
                if (red == ReduceOp::avg) want /= n, bound /= n;
                if (integers && red == ReduceOp::sum) bound = 0;
            }
            const double got = load_as_f32(recv, t, j);
            if (std::fabs(got - want) <= bound) continue; // NaN fails too
            if (++wrong <= 3)
                ADD_FAILURE() << "element " << j << " got " << got << " want " << want;
        }
        EXPECT_EQ(wrong, 0u) << "#wrong";
        if (!in_place) {
            EXPECT_EQ(std::memcmp(send_before.data(), send, send_before.size()), 0)
                << "send buffer modified";
        }
        const OpStats st = comm.stats().get(stats_key(op, algo));
        EXPECT_EQ(st.calls, 1u);
        const LinkBytes want = predicted_bytes_sent(op, algo, count, es, comm.node_layout(), r, 0);
        EXPECT_EQ(st.bytes_sent, want.total());
        EXPECT_EQ(st.sent_by_link.intra_node, want.intra_node);
        EXPECT_EQ(st.sent_by_link.inter_node, want.inter_node);
        return std::vector<char>(recv, recv + sz.recv * es);
    }

    bool same_on_all_ranks(const std::vector<char>& bytes) {
        std::vector<char> first = bytes;
        MPI_Bcast(first.data(), int(first.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
        int same = first == bytes ? 1 : 0;
        MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        return same == 1;
    }

    void check_algorithm(CollectiveOp op, Algo algo) {
        for (const NodeLayout& layout : layouts(n)) {
            comm.set_node_layout(layout);
            for (DType t : kTypes)
                for (std::size_t count : counts())
                    for (bool in_place : {false, true})
                        for (ReduceOp red : {ReduceOp::sum, ReduceOp::avg}) {
                            if (red == ReduceOp::avg && op == CollectiveOp::allgather) continue;
                            auto got = run_case(op, algo, t, count, in_place, red, false);
                            if (op == CollectiveOp::allreduce) {
                                EXPECT_TRUE(same_on_all_ranks(got))
                                    << algo_name(algo) << " " << dtype_name(t) << " " << count;
                            }
                        }
            // Exact sums: the same bits as the plain ring's, whatever the order of additions.
            for (DType t : kTypes)
                for (std::size_t count : {std::size_t(5), std::size_t(4099)}) {
                    auto ours = run_case(op, algo, t, count, false, ReduceOp::sum, true);
                    auto ring = run_case(op, Algo::ring, t, count, false, ReduceOp::sum, true);
                    EXPECT_EQ(ours, ring) << op_name(op) << " " << dtype_name(t);
                }
        }
    }
};
} // namespace

TEST_F(MeshTest, HalvingDoublingAllReduce) {
    check_algorithm(CollectiveOp::allreduce, Algo::hd);
}

TEST_F(MeshTest, HierarchicalReduceScatter) {
    check_algorithm(CollectiveOp::reduce_scatter, Algo::hier);
}

TEST_F(MeshTest, HierarchicalAllGather) {
    check_algorithm(CollectiveOp::allgather, Algo::hier);
}

TEST_F(MeshTest, HierarchicalAllReduce) {
    check_algorithm(CollectiveOp::allreduce, Algo::hier);
}

TEST_F(MeshTest, RingBytesByLinkClassMatchTheModelOnEveryLayout) {
    for (const NodeLayout& layout : layouts(n)) {
        comm.set_node_layout(layout);
        for (CollectiveOp op : {CollectiveOp::allgather, CollectiveOp::reduce_scatter,
                                CollectiveOp::allreduce, CollectiveOp::broadcast,
                                CollectiveOp::reduce, CollectiveOp::gather, CollectiveOp::scatter})
            for (int root : {0, n - 1}) {
                const std::size_t count = 1001;
                std::vector<float> send(count), recv(count);
                comm.stats().reset();
                comm.run({op, send.data(), recv.data(), count, DType::f32, ReduceOp::sum, root},
                         Algo::ring);
                const OpStats st = comm.stats().get(op_name(op));
                const LinkBytes want =
                    predicted_bytes_sent(op, Algo::ring, count, 4, layout, r, root);
                EXPECT_EQ(want.total(), ring_bytes_sent(op, count, 4, n, r, root));
                EXPECT_EQ(st.sent_by_link, want) << op_name(op) << " " << layout.describe();
                EXPECT_EQ(st.bytes_sent, st.sent_by_link.total());
            }
    }
}

TEST_F(MeshTest, HierarchicalRefusesUnequalNodesOnEveryRank) {
    if (n != 3) GTEST_SKIP() << "needs N = 3 for a 2+1 layout";
    comm.set_node_layout(NodeLayout({0, 0, 1}));
    std::vector<float> buf(6);
    try {
        comm.all_reduce(buf.data(), buf.data(), 6, DType::f32, ReduceOp::sum, Algo::hier);
        FAIL() << "a 2+1 layout must be refused";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("same number of ranks"), std::string::npos);
    }
    comm.barrier(); // nobody went into the collective: everyone is still in step
    comm.synchronize();
}

TEST_F(MeshTest, ProcessGroupsHoldTheRightRanksAndTheirOwnStatistics) {
    ProcessGroups::Factory make = [&](MPI_Comm c) { return backend->communicator(c); };
    for (int k = 1; k <= n; ++k) {
        if (n % k != 0) continue;
        comm.set_node_layout(NodeLayout::blocks(n, k));
        for (int s = 1; s <= n; ++s) {
            if (n % s != 0) continue;
            SCOPED_TRACE(testing::Message() << "N=" << n << " K=" << k << " S=" << s);
            ProcessGroups g(comm, s, make);
            comm.stats().reset();
            // Each group's all-reduce of the world ranks is the sum of its members' ranks.
            auto sum_of = [](const std::vector<int>& m) {
                float x = 0;
                for (int v : m) x += float(v);
                return x;
            };
            auto all_reduce_rank = [&](Communicator& c) {
                float in = float(r), out = -1;
                c.all_reduce(&in, &out, 1, DType::f32);
                c.synchronize();
                return out;
            };
            EXPECT_EQ(all_reduce_rank(g.shard()), sum_of(shard_group_members(n, s, r)));
            EXPECT_EQ(all_reduce_rank(g.replicate()), sum_of(replicate_group_members(n, s, r)));
            std::vector<int> node;
            for (int j = r / k * k; j < r / k * k + k; ++j) node.push_back(j);
            EXPECT_EQ(all_reduce_rank(g.node()), sum_of(node));
            EXPECT_EQ(g.shard().size(), s);
            EXPECT_EQ(g.replicate().size(), n / s);
            EXPECT_EQ(g.node().size(), k);
            // Each group counted its own call; the world none.
            EXPECT_EQ(comm.stats().get("allreduce").calls, 0u);
            EXPECT_EQ(g.shard().stats().get("allreduce").calls, 1u);
            // A node group never crosses the network; a replicate group of blocks-of-k shards
            // crosses it on every byte when a shard group is a whole number of nodes.
            EXPECT_EQ(g.node().stats().get("allreduce").sent_by_link.inter_node, 0u);
            if (s % k == 0) {
                EXPECT_EQ(g.replicate().stats().get("allreduce").sent_by_link.intra_node, 0u);
            }
            EXPECT_EQ(g.node().node_layout().nodes(), 1);
        }
    }
}

TEST(NodeLayoutRules, RanksPerNodeMustDivideN) {
    try {
        NodeLayout::blocks(6, 4);
        FAIL();
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("--ranks-per-node 4 must divide"), std::string::npos);
    }
    EXPECT_EQ(NodeLayout::blocks(6, 3).describe(), "2 nodes x 3 ranks");
    EXPECT_EQ(NodeLayout({5, 5, 2}).describe(), "2 nodes: 2+1 ranks");
    EXPECT_THROW(node_shard_size(NodeLayout({0, 1, 0, 1})), UsageError);
    EXPECT_EQ(node_shard_size(NodeLayout::blocks(6, 2)), 2);
    EXPECT_THROW(shard_group_members(6, 4, 0), UsageError);
}
