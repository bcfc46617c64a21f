// The CPU backend's streams and events: in-order and asynchronous execution on a worker thread,
// events that order streams and the host, real concurrency between streams, timing, host copies,
// and the error rules (an error in any task poisons the group, skips later work, completes every
// event, and is rethrown by the next synchronize; an abandoned stream never blocks its owner).
#include "core/cpu_stream.h"
#include "core/device_context.h"
#include "core/error.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

using namespace shardlab;
using namespace std::chrono_literals;

namespace {
std::shared_ptr<StreamGroupState> group() {
    return std::make_shared<StreamGroupState>();
}

// A gate a task waits at until the host opens it.
struct Gate {
    std::promise<void> open_promise;
    std::shared_future<void> opened = open_promise.get_future().share();
    void open() { open_promise.set_value(); }
    bool wait_for(std::chrono::milliseconds t) const {
        return opened.wait_for(t) == std::future_status::ready;
    }
};
} // namespace

TEST(CpuStream, RunsTasksInOrderOnItsOwnThreadWithoutBlockingTheHost) {
    CpuStream s("compute", group());
    Gate gate;
    std::vector<int> order;
    std::thread::id worker;
    s.enqueue([&] {
        worker = std::this_thread::get_id();
        gate.wait_for(10s);
    });
    for (int i = 0; i < 1000; ++i) s.enqueue([&order, i] { order.push_back(i); });
    // Everything is queued while the first task still waits: enqueue never blocks.
    EXPECT_TRUE(order.empty());
    gate.open();
    s.synchronize();
    ASSERT_EQ(order.size(), 1000u);
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(order[i], i);
    EXPECT_NE(worker, std::this_thread::get_id());
}

TEST(CpuStream, EventsMarkAPointOfOneStream) {
    CpuStream s("compute", group());
    Gate gate;
    s.enqueue([&] { gate.wait_for(10s); });
    const EventPtr e = s.record();
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(e->query()); // the stream has not passed the gate
    gate.open();
    e->synchronize();
    EXPECT_TRUE(e->query());
}

TEST(CpuStream, AWaitOrdersOneStreamAfterAnotherAndOnlyThat) {
    auto g = group();
    CpuStream a("comm", g), b("compute", g);
    Gate gate;
    std::atomic<bool> a_done{false}, b_saw_a{false}, b_free_ran{false};
    b.enqueue([&] { b_free_ran = true; }); // before the wait: not held back
    a.enqueue([&] {
        gate.wait_for(10s);
        a_done = true;
    });
    b.wait(a.record());
    b.enqueue([&] { b_saw_a = a_done.load(); });
    const EventPtr b_end = b.record();
    std::this_thread::sleep_for(20ms);
    EXPECT_TRUE(b_free_ran.load());
    EXPECT_FALSE(b_end->query()); // b is held at the wait
    gate.open();
    b.synchronize();
    EXPECT_TRUE(b_saw_a.load());
}

TEST(CpuStream, TwoStreamsRunAtTheSameTime) {
    // Each task waits for the other's signal: serialised execution would never finish.
    auto g = group();
    CpuStream a("compute", g), b("comm", g);
    Gate from_a, from_b;
    std::atomic<bool> a_ok{false}, b_ok{false};
    a.enqueue([&] {
        from_a.open();
        a_ok = from_b.wait_for(5s);
    });
    b.enqueue([&] {
        from_b.open();
        b_ok = from_a.wait_for(5s);
    });
    a.synchronize();
    b.synchronize();
    EXPECT_TRUE(a_ok.load());
    EXPECT_TRUE(b_ok.load());
}

TEST(CpuStream, EventsTimeTheWorkBetweenThem) {
    CpuStream s("compute", group());
    const EventPtr start = s.record();
    s.enqueue([] { std::this_thread::sleep_for(30ms); });
    const EventPtr end = s.record();
    end->synchronize();
    const double t = end->seconds_since(*start);
    EXPECT_GE(t, 0.029);
    EXPECT_LT(t, 5.0);
}

TEST(CpuStream, UploadTakesTheHostDataWhenCalledMemcpyWhenRun) {
    CpuStream s("copy", group());
    Gate gate;
    s.enqueue([&] { gate.wait_for(10s); });
    std::vector<int> host{1, 2, 3}, uploaded(3), copied(3);
    s.upload(uploaded.data(), host.data(), 3 * sizeof(int));
    s.memcpy(copied.data(), host.data(), 3 * sizeof(int));
    host = {7, 8, 9}; // the host reuses its buffer at once
    gate.open();
    s.synchronize();
    EXPECT_EQ(uploaded, (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(copied, (std::vector<int>{7, 8, 9})); // memcpy reads when the stream gets there
}

TEST(CpuStream, AnErrorPoisonsTheGroupAndIsRethrownWithoutBlockingAnyone) {
    auto g = group();
    CpuStream a("compute", g), b("comm", g);
    std::atomic<int> ran{0};
    a.enqueue([] { throw Error("kernel failed: bad shape"); });
    a.enqueue([&] { ++ran; }); // skipped: after the error
    const EventPtr mark = a.record();
    b.wait(mark); // still completes: marks run after an error
    b.enqueue([&] { ++ran; });
    try {
        b.synchronize();
        FAIL() << "synchronize must rethrow the group's first error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "kernel failed: bad shape");
    }
    EXPECT_THROW(a.synchronize(), Error);
    EXPECT_TRUE(mark->query());
    EXPECT_EQ(ran.load(), 0);
}

TEST(CpuStream, AnAbandonedStreamDoesNotWaitForAStuckTask) {
    auto s = std::make_unique<CpuStream>("comm", group());
    auto gate = std::make_shared<Gate>();
    s->enqueue([gate] { gate->wait_for(60s); }); // a peer that never answers
    std::this_thread::sleep_for(10ms);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(s->abandon(0.1));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    gate->open(); // let the detached worker end
    s.reset();
}

TEST(DeviceContext, HasThreeStreamsAndSynchronizesThemAll) {
    auto ctx = make_cpu_context();
    EXPECT_EQ(ctx->compute().name(), "compute");
    EXPECT_EQ(ctx->comm().name(), "comm");
    EXPECT_EQ(ctx->copy().name(), "copy");
    std::atomic<int> n{0};
    for (Stream* s : {&ctx->compute(), &ctx->comm(), &ctx->copy()})
        s->enqueue([&] {
            std::this_thread::sleep_for(5ms);
            ++n;
        });
    ctx->synchronize();
    EXPECT_EQ(n.load(), 3);
}
