// The emulator's schedules (SHARDLAB_EMU_SCHEDULE, emu/schedule.h): parsing, the order a block's
// threads start in under each, and that a random one is a permutation fixed by its seed, the kernel
// and the block. CTest runs this under forward, reverse and random:7; each check holds under the
// schedule the process was started with.
#include "emu/schedule.h"
#include "emu/simt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

using shardlab::emu::Schedule;

namespace {

__global__ void record_start(std::atomic<int>* next, int* order) {
    const int t = int(threadIdx.x); // under a random schedule a thread may give way here
    order[next->fetch_add(1)] = t;
}

// The order in which the threads of one block of `n` reached their first instruction after
// reading their id.
std::vector<int> start_order(const char* kernel, unsigned n) {
    std::atomic<int> next{0};
    std::vector<int> order(n, -1);
    shardlab::emu::run_grid(kernel, dim3(1), dim3(n), 0,
                            [&] { record_start(&next, order.data()); });
    return order;
}

__global__ void exits_before_barrier() {
    if (threadIdx.x == 3) return;
    __syncthreads();
}

} // namespace

TEST(EmuSchedule, ParsesTheThreeKindsAndRefusesAnythingElse) {
    EXPECT_EQ(Schedule::parse("forward").kind(), Schedule::Kind::forward);
    EXPECT_EQ(Schedule::parse("reverse").kind(), Schedule::Kind::reverse);
    EXPECT_EQ(Schedule::parse("random:42").kind(), Schedule::Kind::random);
    EXPECT_EQ(Schedule::parse("random:42").text(), "random:42");
    for (const char* bad : {"", "random", "random:", "random:x1", "random:-1", "Reverse", "fwd"})
        EXPECT_THROW(Schedule::parse(bad), std::invalid_argument) << bad;
}

TEST(EmuSchedule, ARandomOrderIsAPermutationFixedBySeedKernelAndBlock) {
    const Schedule a = Schedule::parse("random:1"), b = Schedule::parse("random:2");
    Schedule::Block x(a, "k", 0), y(a, "k", 0), other_seed(b, "k", 0), other_block(a, "k", 1),
        other_kernel(a, "j", 0);
    const std::vector<unsigned> first = x.next_round(256);
    EXPECT_EQ(y.next_round(256), first);
    EXPECT_NE(other_seed.next_round(256), first);
    EXPECT_NE(other_block.next_round(256), first);
    EXPECT_NE(other_kernel.next_round(256), first);
    EXPECT_NE(x.next_round(256), first) << "every round is shuffled afresh";
    std::vector<unsigned> sorted = first;
    std::sort(sorted.begin(), sorted.end());
    std::vector<unsigned> identity(256);
    std::iota(identity.begin(), identity.end(), 0u);
    EXPECT_EQ(sorted, identity);
}

TEST(EmuSchedule, ThreadsStartInTheOrderOfTheProcessSchedule) {
    const unsigned n = 96;
    const std::vector<int> order = start_order("record_start", n);
    std::vector<int> forward(n);
    std::iota(forward.begin(), forward.end(), 0);
    std::vector<int> reverse(forward.rbegin(), forward.rend());
    switch (Schedule::process().kind()) {
    case Schedule::Kind::forward:
        EXPECT_EQ(order, forward);
        break;
    case Schedule::Kind::reverse:
        EXPECT_EQ(order, reverse);
        break;
    case Schedule::Kind::random:
        EXPECT_NE(order, forward);
        EXPECT_NE(order, reverse);
        EXPECT_EQ(start_order("record_start", n), order) << "the seed fixes the interleaving";
        std::vector<int> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(sorted, forward);
        break;
    }
}

TEST(EmuSchedule, AKernelFaultNamesTheSchedule) {
    try {
        shardlab::emu::run_grid("exits_before_barrier", dim3(1), dim3(32), 0,
                                [] { exits_before_barrier(); });
        FAIL() << "no fault";
    } catch (const shardlab::emu::KernelError& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "[SHARDLAB_EMU_SCHEDULE=" + Schedule::process().text() + "]"),
                  std::string::npos)
            << e.what();
    }
}
