// Hybrid sharding's bytes by link class (issue 21, item 2) under `mpirun -np N`: for every layout
// of nodes (K consecutive ranks, K | N) and shard groups (S | N, S < N) and ZeRO stages 1-3, a
// TrainSession's measured bytes per collective equal the plan's prediction on every rank, in total
// and per link class; gathers and reduce-scatters of node-sized shard groups never leave the node
// (counted by the transport, not by the model), nor do hpZ's re-gathers (ZeRO++, stage 3 with a
// node-local secondary shard, flat or hybrid); and every rank gets the same gradient norm (the
// world's: summed over one shard group, not once per replica).
#include "comm/node_layout.h"
#include "model/backend.h"
#include "model/gpt2/gpt_init.h"
#include "train/train_session.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

using namespace shardlab;

namespace {
const ModelConfig kConfig{64, 16, 2, 32, 4, 4}; // V T L d H Hkv
const int kBatch = 2, kSeq = 8, kSteps = 2;

std::vector<std::uint16_t> tokens() {
    std::vector<std::uint16_t> t(2000);
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::uint16_t((i * 7 + i / 13) % 64);
    return t;
}

SessionSpec spec(int stage, int shard_group, bool hpz) {
    SessionSpec s;
    s.config = kConfig, s.micro_batch = kBatch, s.seq = kSeq, s.grad_accum = 2;
    s.precision = Precision::bf16;
    s.zero = ZeroOptions{stage, Precision::bf16, stage == 3 ? 1 : 0, 1.0f, 65536.0f};
    s.adam = AdamWConfig{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
    s.shard_group = shard_group;
    s.secondary_shard = hpz;
    return s;
}

bool same_everywhere(double v) {
    double lo = v, hi = v;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}
} // namespace

TEST(HybridSession, BytesByLinkClassAsPredictedOnEveryLayout) {
    int N = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    if (N < 2) GTEST_SKIP() << "one rank has no groups";
    const std::vector<std::uint16_t> data = tokens();
    const TokenWindows train(data, kSeq);
    const std::vector<std::vector<float>> init = gpt2_init(ParamLayout(kConfig), 7, 2);
    int layouts = 0;
    for (int K = 1; K < N; ++K) {
        if (N % K) continue;
        for (int S = 1; S <= N; ++S) {
            if (N % S) continue;
            // Stages 1-3 hybrid (S < N); stage 3 with hpZ where the node lies in the shard group.
            for (int stage = 1; stage <= 4; ++stage) {
                const bool hpz = stage == 4;
                if ((hpz && S % K != 0) || (!hpz && S == N)) continue;
                const std::string what = "K=" + std::to_string(K) + " S=" + std::to_string(S) +
                                         " zero " + std::to_string(hpz ? 3 : stage) +
                                         (hpz ? " hpZ" : "");
                const auto backend = make_cpu_backend(1);
                const auto comm = backend->communicator(MPI_COMM_WORLD);
                comm->set_node_layout(NodeLayout::blocks(N, K));
                TrainSession session(spec(hpz ? 3 : stage, S, hpz), *backend, *comm, backend->ops(),
                                     initial_values_from(init), nullptr);
                ASSERT_EQ(session.shard_size(), S) << what;
                for (int s = 0; s < kSteps; ++s) {
                    const StepOutcome o = session.step(s, train, 1e-2f);
                    EXPECT_TRUE(same_everywhere(o.result.grad_norm)) << what;
                    EXPECT_TRUE(same_everywhere(o.loss)) << what;
                }
                const CommStats stats = session.comm_stats();
                const Plan plan = session.plan();
                for (const auto& [op, link] : plan.comm.by_op_link) {
                    const OpStats got = stats.get(op);
                    EXPECT_EQ(got.sent_by_link.intra_node, kSteps * link.intra_node)
                        << what << " " << op;
                    EXPECT_EQ(got.sent_by_link.inter_node, kSteps * link.inter_node)
                        << what << " " << op;
                    EXPECT_EQ(got.calls, kSteps * plan.comm.calls.at(op)) << what << " " << op;
                }
                for (const auto& [op, s] : stats.ops()) {
                    EXPECT_TRUE(plan.comm.by_op_link.count(op)) << what << ": unpredicted " << op;
                }
                // Shard groups within a node: ZeRO's own traffic stays on the fast link.
                if (K % S == 0 && S < N) {
                    for (const char* op : {"reduce_scatter@shard", "allgather@shard"}) {
                        EXPECT_EQ(stats.get(op).sent_by_link.inter_node, 0u) << what << " " << op;
                    }
                }
                // Node-sized shard groups: the replicas are on other nodes, all of them.
                // hpZ's re-gathers: inside the node, always.
                if (hpz) {
                    EXPECT_EQ(stats.get("allgather@node").sent_by_link.inter_node, 0u) << what;
                    EXPECT_GT(stats.get("allgather@node").calls, 0u) << what;
                }
                if (K == S && !hpz) {
                    const OpStats across = stats.get("allreduce@replicate");
                    EXPECT_EQ(across.sent_by_link.intra_node, 0u) << what;
                    EXPECT_GT(across.sent_by_link.inter_node, 0u) << what;
                }
                ++layouts;
            }
        }
    }
    EXPECT_GT(layouts, 0);
}
