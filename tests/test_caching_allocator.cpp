// The caching allocator's rules: a block comes back to the stream that allocated it — at once when
// that stream released it, after the release point when another stream (its last user) did, the
// allocating stream waiting for it (never the host, and never a fresh block); another stream gets
// it only once it is free, and never one still in use; sizes round to 512 B and a block serves
// requests down to half its size, best fit first.
#include "core/caching_allocator.h"
#include "core/cpu_stream.h"
#include "core/error.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

using namespace shardlab;
using namespace std::chrono_literals;

namespace {
struct Streams {
    std::shared_ptr<StreamGroupState> g = std::make_shared<StreamGroupState>();
    CpuStream a{"a", g}, b{"b", g};
};
} // namespace

TEST(CachingAllocator, SameStreamReusesAtOnce) {
    Streams s;
    CachingAllocator alloc(Device::cpu(), false);
    void* p = alloc.allocate(1000, s.a);
    alloc.free(p, s.a);
    EXPECT_EQ(alloc.allocate(1000, s.a), p);
    EXPECT_EQ(alloc.raw_allocations(), 1u);
    EXPECT_EQ(alloc.reserved(), 1024u);
}

TEST(CachingAllocator, AnotherStreamReusesOnceTheFirstHasPassedTheRelease) {
    Streams s;
    CachingAllocator alloc(Device::cpu(), false);
    void* p = alloc.allocate(4096, s.a);
    alloc.free(p, s.a);
    s.a.synchronize();
    EXPECT_EQ(alloc.allocate(4096, s.b), p);
    EXPECT_EQ(alloc.raw_allocations(), 1u);
}

TEST(CachingAllocator, TheOwnerWaitsForItsBlockToBeReleasedInsteadOfGrowing) {
    // Allocated on b (a ZeRO-3 gather on the comm stream), last used on a (compute): b asks again
    // before a has got to the release, and is made to wait for it.
    Streams s;
    CachingAllocator alloc(Device::cpu(), false);
    std::promise<void> gate;
    auto opened = gate.get_future().share();
    std::atomic<bool> a_wrote{false}, b_saw_a_done{false};
    auto* p = static_cast<int*>(alloc.allocate(4096, s.b));
    s.a.enqueue([&, opened] {
        opened.wait_for(10s);
        p[0] = 1; // the last use on a, still pending when b asks
        a_wrote = true;
    });
    alloc.free(p, s.a);
    EXPECT_EQ(alloc.allocate(4096, s.b), p); // handed back, not a new block
    s.b.enqueue([&] { b_saw_a_done = a_wrote.load(); });
    const EventPtr b_end = s.b.record();
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(b_end->query()); // b waits for a's release point
    gate.set_value();
    s.b.synchronize();
    EXPECT_TRUE(b_saw_a_done.load());
    EXPECT_EQ(alloc.raw_allocations(), 1u);
}

TEST(CachingAllocator, NoStreamTakesAnothersBlockStillInUse) {
    // a's block is released behind a gate: b gets fresh memory rather than wait for work of a's
    // it does not depend on.
    Streams s;
    CachingAllocator alloc(Device::cpu(), false);
    std::promise<void> gate;
    auto opened = gate.get_future().share();
    void* p = alloc.allocate(4096, s.a);
    s.a.enqueue([opened] { opened.wait_for(10s); });
    alloc.free(p, s.a);
    void* q = alloc.allocate(4096, s.b);
    EXPECT_NE(q, p);
    s.b.synchronize(); // not held at a's gate
    EXPECT_EQ(alloc.raw_allocations(), 2u);
    gate.set_value();
    s.a.synchronize();
}

TEST(CachingAllocator, AnotherStreamTakesTheBlockThatIsFreeNowNotTheBusyOne) {
    Streams s;
    CachingAllocator alloc(Device::cpu(), false);
    std::promise<void> gate;
    auto opened = gate.get_future().share();
    void* busy = alloc.allocate(2048, s.a);
    void* idle = alloc.allocate(2048, s.a);
    alloc.free(idle, s.a);
    s.a.synchronize(); // a has passed this release: free now
    s.a.enqueue([opened] { opened.wait_for(10s); });
    alloc.free(busy, s.a); // behind the gate
    EXPECT_EQ(alloc.allocate(2048, s.b), idle);
    gate.set_value();
    s.a.synchronize();
}

TEST(CachingAllocator, AStreamTakesItsOwnBlockBeforeAnothers) {
    Streams s;
    CachingAllocator alloc(Device::cpu(), false);
    void* theirs = alloc.allocate(1024, s.b);
    void* mine = alloc.allocate(2048, s.a);
    alloc.free(theirs, s.b);
    alloc.free(mine, s.a);
    s.b.synchronize(); // b's block is free now, and fits better
    EXPECT_EQ(alloc.allocate(1024, s.a), mine);
    EXPECT_EQ(alloc.allocate(1024, s.a), theirs); // then another stream's, once it has let go
}

TEST(CachingAllocator, RoundsToBlocksAndServesDownToHalfABlockBestFitFirst) {
    Streams s;
    CachingAllocator alloc(Device::cpu(), false);
    EXPECT_EQ(CachingAllocator::rounded(1), 512u);
    EXPECT_EQ(CachingAllocator::rounded(600), 1024u);
    void* big = alloc.allocate(4096, s.a);
    void* mid = alloc.allocate(1536, s.a);
    void* small = alloc.allocate(1024, s.a);
    alloc.free(big, s.a);
    alloc.free(mid, s.a);
    alloc.free(small, s.a);
    EXPECT_EQ(alloc.allocate(1000, s.a), small); // best fit
    EXPECT_EQ(alloc.allocate(1000, s.a), mid);   // 1536 <= 2 x 1024
    void* fresh = alloc.allocate(1000, s.a);     // 4096 is more than twice the request
    EXPECT_NE(fresh, big);
    EXPECT_EQ(alloc.raw_allocations(), 4u);
    EXPECT_EQ(alloc.reserved(), 4096u + 1536u + 1024u + 1024u);
    EXPECT_EQ(alloc.peak_reserved(), alloc.reserved());
}

namespace {
// A stream on a device that has failed: as after a sticky CUDA error, recording an event throws.
struct FailedStream : CpuStream {
    using CpuStream::CpuStream;
    EventPtr record_untimed() override { throw Error("cudaEventRecord: an illegal memory access"); }
};
} // namespace

TEST(CachingAllocator, AFreeOnAFailedStreamDropsTheBlockInsteadOfThrowing) {
    // A destructor frees while the error unwinds (~Allocation): a throw there is std::terminate.
    auto g = std::make_shared<StreamGroupState>();
    FailedStream failed{"failed", g};
    CachingAllocator alloc(Device::cpu(), false);
    void* p = alloc.allocate(1000, failed);
    EXPECT_NO_THROW(alloc.free(p, failed));
    void* q = alloc.allocate(1000, failed);
    EXPECT_NE(q, p); // never handed out again: nothing says when its last use ends
    EXPECT_EQ(alloc.raw_allocations(), 2u);
    EXPECT_THROW(alloc.free(p, failed), Error); // it is not in use either
    alloc.free(q, failed);
}
