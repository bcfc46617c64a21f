// The communication model's closed forms, pinned against numbers worked out by hand (in the
// comments) and against a step-by-step count of the chunks each algorithm's schedule sends.
#include "comm/chunking.h"
#include "comm/comm_model.h"
#include "comm/communicator.h"
#include "core/error.h"

#include <gtest/gtest.h>

using namespace shardlab;

TEST(Chunking, UnevenSplitsPutTheLongerChunksFirst) {
    Chunking ch{10, 4}; // 3,3,2,2
    EXPECT_EQ(ch.size(0), 3u);
    EXPECT_EQ(ch.size(1), 3u);
    EXPECT_EQ(ch.size(2), 2u);
    EXPECT_EQ(ch.size(3), 2u);
    EXPECT_EQ(ch.offset(2), 6u);
    EXPECT_EQ(ch.offset(3), 8u);
    Chunking small{2, 5}; // 1,1,0,0,0
    EXPECT_EQ(small.size(1), 1u);
    EXPECT_EQ(small.size(2), 0u);
    EXPECT_EQ(small.offset(4), 2u);
    EXPECT_EQ(Chunking({0, 3}).max_size(), 0u);
}

TEST(CommModel, WorkedExampleTenFloatsOnFourRanks) {
    // S = 40 B; chunks 12, 12, 8, 8 B.
    const int n = 4;
    // allgather: S - c(r+1) -> 40-12, 40-8, 40-8, 40-12
    const std::uint64_t ag[] = {28, 32, 32, 28};
    // reduce_scatter: S - c(r) -> 28, 28, 32, 32
    const std::uint64_t rs[] = {28, 28, 32, 32};
    for (int r = 0; r < n; ++r) {
        EXPECT_EQ(ring_bytes_sent(CollectiveOp::allgather, 10, 4, n, r, 0), ag[r]) << r;
        EXPECT_EQ(ring_bytes_sent(CollectiveOp::reduce_scatter, 10, 4, n, r, 0), rs[r]) << r;
        EXPECT_EQ(ring_bytes_sent(CollectiveOp::allreduce, 10, 4, n, r, 0), ag[r] + rs[r]) << r;
    }
    // broadcast from root 1: root scatters 40-12 = 28 and all-gathers 40-8 = 32 -> 60.
    EXPECT_EQ(ring_bytes_sent(CollectiveOp::broadcast, 10, 4, n, 1, 1), 60u);
    EXPECT_EQ(ring_bytes_sent(CollectiveOp::broadcast, 10, 4, n, 2, 1), 32u);
    // reduce to root 2: root 40-8 = 32; others the whole 40.
    EXPECT_EQ(ring_bytes_sent(CollectiveOp::reduce, 10, 4, n, 2, 2), 32u);
    EXPECT_EQ(ring_bytes_sent(CollectiveOp::reduce, 10, 4, n, 0, 2), 40u);
    // gather / scatter with root 0.
    EXPECT_EQ(ring_bytes_sent(CollectiveOp::gather, 10, 4, n, 3, 0), 8u);
    EXPECT_EQ(ring_bytes_sent(CollectiveOp::gather, 10, 4, n, 0, 0), 0u);
    EXPECT_EQ(ring_bytes_sent(CollectiveOp::scatter, 10, 4, n, 0, 0), 28u);
    EXPECT_EQ(ring_bytes_sent(CollectiveOp::scatter, 10, 4, n, 1, 0), 0u);
}

TEST(CommModel, EvenBuffersGiveTheTextbookFractions) {
    // 1 MiB of bf16 on 8 ranks: (N-1)/N·S = 917504, 2(N-1)/N·S = 1835008.
    const std::size_t count = 1 << 19;
    for (int r = 0; r < 8; ++r) {
        EXPECT_EQ(ring_bytes_sent(CollectiveOp::allgather, count, 2, 8, r, 0), 917504u);
        EXPECT_EQ(ring_bytes_sent(CollectiveOp::reduce_scatter, count, 2, 8, r, 0), 917504u);
        EXPECT_EQ(ring_bytes_sent(CollectiveOp::allreduce, count, 2, 8, r, 0), 1835008u);
    }
    EXPECT_EQ(ring_bytes_sent(CollectiveOp::allreduce, count, 2, 1, 0, 0), 0u); // N = 1
}

TEST(CommModel, ClosedFormsEqualTheScheduleStepByStep) {
    // Walk each ring schedule and add up the chunks sent, for many (count, N): the closed forms
    // must agree with the schedules the algorithms follow.
    for (int n = 1; n <= 7; ++n)
        for (std::size_t count : {0u, 1u, 2u, 5u, 13u, 64u, 101u}) {
            Chunking ch{count, n};
            for (int r = 0; r < n; ++r) {
                std::uint64_t ag = 0, rs = 0;
                for (int k = 0; k < n - 1; ++k) {
                    ag += ch.size(ring_mod(r - k, n)) * 4;     // all-gather step k sends chunk r-k
                    rs += ch.size(ring_mod(r - k - 1, n)) * 4; // reduce-scatter: chunk r-k-1
                }
                EXPECT_EQ(ring_bytes_sent(CollectiveOp::allgather, count, 4, n, r, 0), ag);
                EXPECT_EQ(ring_bytes_sent(CollectiveOp::reduce_scatter, count, 4, n, r, 0), rs);
                EXPECT_EQ(ring_bytes_sent(CollectiveOp::allreduce, count, 4, n, r, 0), ag + rs);
            }
        }
}

TEST(CommModel, BusBandwidthFactorsAsNcclTests) {
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::allreduce, 4), 1.5);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::allgather, 4), 0.75);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::reduce_scatter, 2), 0.5);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::broadcast, 8), 1.0);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::reduce, 8), 1.0);
}

TEST(CommModel, OpNamesRoundTripAndUnknownNamesAreRejected) {
    for (auto op : {CollectiveOp::allgather, CollectiveOp::reduce_scatter, CollectiveOp::allreduce,
                    CollectiveOp::broadcast, CollectiveOp::reduce, CollectiveOp::gather,
                    CollectiveOp::scatter})
        EXPECT_EQ(parse_op(op_name(op)), op);
    EXPECT_THROW(parse_op("alltoall"), Error);
    EXPECT_THROW(parse_algo("tree"), Error);
}
