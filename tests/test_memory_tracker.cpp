// MemoryTracker: exact current / peak bytes per (arena, category) and in total, frees on
// destruction and on move-assignment, and per-phase peaks.
#include "core/cpu_stream.h"
#include "core/error.h"
#include "core/memory_tracker.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace shardlab;

namespace {
// Every allocation names the stream it is used on; these tests use one.
CpuStream& stream() {
    static CpuStream s("test", std::make_shared<StreamGroupState>());
    return s;
}
} // namespace

TEST(MemoryTracker, CountsCurrentAndPeakPerCategory) {
    MemoryTracker t(Device::cpu());
    {
        Allocation p = t.allocate(1000, Category::params, stream());
        Allocation g = t.allocate(500, Category::grads, stream());
        EXPECT_EQ(t.current(Category::params), 1000u);
        EXPECT_EQ(t.current(Category::grads), 500u);
        EXPECT_EQ(t.counts().total[int(Arena::device)].current, 1500u);
        std::memset(p.data(), 0, p.bytes()); // the memory is real and writable
        g.release();
        EXPECT_EQ(t.current(Category::grads), 0u);
        EXPECT_EQ(t.peak(Category::grads), 500u);
        Allocation g2 = t.allocate(200, Category::grads, stream());
        EXPECT_EQ(t.peak(Category::grads), 500u);
        EXPECT_EQ(t.counts().total[int(Arena::device)].peak, 1500u);
    }
    EXPECT_EQ(t.current(Category::params), 0u);
    EXPECT_EQ(t.peak(Category::params), 1000u);
    EXPECT_EQ(t.counts().total[int(Arena::device)].current, 0u);
}

TEST(MemoryTracker, TotalPeakIsTheTrueHighWaterMark) {
    // Activations and workspace peak at different times: the total's peak (300) is below the
    // sum of the category peaks (400).
    MemoryTracker t(Device::cpu());
    {
        Allocation a = t.allocate(200, Category::activations, stream());
        Allocation w = t.allocate(100, Category::workspace, stream());
    }
    { Allocation w = t.allocate(200, Category::workspace, stream()); }
    EXPECT_EQ(t.peak(Category::activations) + t.peak(Category::workspace), 400u);
    EXPECT_EQ(t.counts().total[int(Arena::device)].peak, 300u);
}

TEST(MemoryTracker, HostAndDeviceArenasAreSeparate) {
    MemoryTracker t(Device::cpu());
    Allocation m = t.allocate(4096, Category::master, stream(), Arena::host);
    Allocation p = t.allocate(1024, Category::params, stream(), Arena::device);
    EXPECT_EQ(t.current(Category::master, Arena::host), 4096u);
    EXPECT_EQ(t.current(Category::master, Arena::device), 0u);
    EXPECT_EQ(t.counts().total[int(Arena::host)].current, 4096u);
    EXPECT_EQ(t.counts().total[int(Arena::device)].current, 1024u);
    EXPECT_EQ(m.arena(), Arena::host);
    EXPECT_EQ(m.device(), Device::cpu());
}

TEST(MemoryTracker, MoveTransfersOwnershipAndAssignmentFreesTheOld) {
    MemoryTracker t(Device::cpu());
    Allocation a = t.allocate(100, Category::optimizer, stream());
    Allocation b = std::move(a);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(t.current(Category::optimizer), 100u);
    b = t.allocate(30, Category::optimizer, stream()); // frees the 100 first
    EXPECT_EQ(t.current(Category::optimizer), 30u);
    EXPECT_EQ(t.peak(Category::optimizer), 130u); // the new block exists before the old is freed
    b.release();
    b.release(); // idempotent
    EXPECT_EQ(t.current(Category::optimizer), 0u);
}

TEST(MemoryTracker, PhasesRecordTheirPeaksAcrossOccurrences) {
    MemoryTracker t(Device::cpu());
    Allocation p = t.allocate(100, Category::params, stream());
    {
        Allocation act = t.allocate(1000, Category::activations, stream());
        t.snapshot("forward");
    }
    { Allocation act = t.allocate(300, Category::activations, stream()); }
    t.snapshot("backward");
    ASSERT_EQ(t.phases().size(), 2u);
    const auto& fwd = t.phases()[0];
    const auto& bwd = t.phases()[1];
    EXPECT_EQ(fwd.name, "forward");
    EXPECT_EQ(fwd.counts.at(Arena::device, Category::activations).current, 1000u);
    EXPECT_EQ(fwd.counts.at(Arena::device, Category::activations).peak, 1000u);
    // The backward phase started with 1000 live (peak reset to current), then freed it, then
    // peaked at 300: its own peak is the 1000 it started with.
    EXPECT_EQ(bwd.counts.at(Arena::device, Category::activations).current, 0u);
    EXPECT_EQ(bwd.counts.at(Arena::device, Category::activations).peak, 1000u);
    t.snapshot("idle");
    EXPECT_EQ(t.phases()[2].counts.at(Arena::device, Category::activations).peak, 0u);
    EXPECT_EQ(t.phases()[2].counts.at(Arena::device, Category::params).peak, 100u);
    // A second forward, smaller: the phase keeps its larger peak and takes the new current.
    {
        Allocation act = t.allocate(200, Category::activations, stream());
        t.snapshot("forward");
    }
    ASSERT_EQ(t.phases().size(), 3u);
    EXPECT_EQ(t.phases()[0].counts.at(Arena::device, Category::activations).peak, 1000u);
    EXPECT_EQ(t.phases()[0].counts.at(Arena::device, Category::activations).current, 200u);
    // ... and a larger one raises it.
    {
        Allocation act = t.allocate(5000, Category::activations, stream());
        t.snapshot("forward");
    }
    EXPECT_EQ(t.phases()[0].counts.at(Arena::device, Category::activations).peak, 5000u);
    EXPECT_EQ(t.phases()[0].counts.total[int(Arena::device)].peak, 5100u);
}

TEST(MemoryTracker, RequestedBytesAreCountedReservedBytesBeside) {
    MemoryTracker t(Device::cpu());
    {
        Allocation a = t.allocate(1000, Category::activations, stream());
        EXPECT_EQ(t.current(Category::activations), 1000u);
        EXPECT_EQ(t.allocator(Arena::device).reserved(), 1024u); // rounded up to 512 B blocks
    }
    // Released, uncounted, but kept by the allocator and handed back for the next request.
    EXPECT_EQ(t.current(Category::activations), 0u);
    EXPECT_EQ(t.allocator(Arena::device).reserved(), 1024u);
    Allocation again = t.allocate(900, Category::grads, stream());
    EXPECT_EQ(t.allocator(Arena::device).raw_allocations(), 1u);
    EXPECT_EQ(t.current(Category::grads), 900u);
}

TEST(MemoryTracker, CategoryNames) {
    EXPECT_STREQ(category_name(Category::comm_buffers), "comm_buffers");
    EXPECT_STREQ(category_name(Category::master), "master");
    EXPECT_STREQ(arena_name(Arena::host), "host");
}

TEST(Device, CudaDeviceWithoutGpuFailsWithAClearMessage) {
    GpuQuery q = query_gpus();
    if (!q.gpus.empty()) GTEST_SKIP() << "a GPU is present; this test covers the no-GPU path";
    MemoryTracker t(Device::cuda(0));
    try {
        Allocation a = t.allocate(16, Category::params, stream());
        FAIL() << "allocating on a missing GPU must throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("GPU"), std::string::npos) << e.what();
    }
    EXPECT_EQ(t.current(Category::params), 0u); // nothing counted for a failed allocation
}

TEST(MemoryTracker, HostStagingIsCountedOutsideTheArenasAndRamPeaksTogether) {
    // Blocks round to 512 bytes (CachingAllocator::rounded). Staging of 3000 bytes, freed, then a
    // 1024-byte block: staging's peak 3000, the reserve 1024, and the RAM explained at once
    // max(0 + 3000, 1024 + 0) = 3000, not the 4024 the two peaks add to.
    MemoryTracker t(Device::cpu());
    { const HostStaging s(t, 3000); }
    Allocation p = t.allocate(1000, Category::params, stream());
    EXPECT_EQ(t.counts().staging.peak, 3000u);
    EXPECT_EQ(t.counts().staging.current, 0u);
    EXPECT_EQ(t.counts().total[int(Arena::device)].peak, 1000u); // staging is in no arena
    EXPECT_EQ(t.counts().ram.peak, 3000u);
    EXPECT_EQ(t.counts().ram.current, 1024u);
    t.snapshot("init");
    // A new phase: the reserve stays (1024) and staging on top of it peaks at 1024 + 600.
    { const HostStaging s(t, 600); }
    t.snapshot("end");
    EXPECT_EQ(t.phases().back().counts.ram.peak, 1624u);
    EXPECT_EQ(t.phases().back().counts.staging.peak, 600u);
    EXPECT_EQ(t.phases().front().counts.ram.peak, 3000u);
}
