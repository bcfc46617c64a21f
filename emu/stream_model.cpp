// The emulated driver's host-function thread, the seeded interleaving of streams and the stall
// switch (emu/stream_model.h). Process-wide, as the CUDA driver's state is.
#include "emu/stream_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>

namespace shardlab::emu {

namespace {

struct Settings {
    bool serial_host_functions = true;
    bool interleave = true;
    unsigned long long seed = 1;
    bool stall_host_function = false;
    unsigned long long stall_at = 0; // 1-based; 0: no stall

    Settings() {
        if (const char* h = std::getenv("SHARDLAB_EMU_HOSTFN"))
            serial_host_functions = std::strcmp(h, "free") != 0;
        if (const char* s = std::getenv("SHARDLAB_EMU_STREAMS")) {
            interleave = std::strncmp(s, "interleave", 10) == 0;
            if (interleave && s[10] == ':') seed = std::strtoull(s + 11, nullptr, 10);
        }
        const char* stall = std::getenv("SHARDLAB_EMU_STALL");
        if (stall && rank() == 1) {
            stall_host_function = std::strncmp(stall, "hostfn:", 7) == 0;
            if (stall_host_function || std::strncmp(stall, "op:", 3) == 0)
                stall_at = std::strtoull(std::strchr(stall, ':') + 1, nullptr, 10);
        }
    }
    static int rank() {
        for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
            if (const char* r = std::getenv(v)) return std::atoi(r);
        return 0;
    }
};
const Settings& settings() {
    static const Settings s;
    return s;
}

unsigned long long splitmix(unsigned long long& state) {
    unsigned long long z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
double uniform(unsigned long long& state) {
    return double(splitmix(state) >> 11) * 0x1.0p-53;
}

// The one thread that runs every host function of the process, first come first served. Never
// destroyed: a host function that never returns (a stall) must not hang the process's exit.
class HostFunctionThread {
  public:
    HostFunctionThread() {
        std::thread([this] { loop(); }).detach();
    }

    // Called by a stream's worker: the stream waits until its host function has run.
    void run(const std::function<void()>& fn) {
        std::packaged_task<void()> task(fn);
        std::future<void> done = task.get_future();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            queue_.push_back(std::move(task));
        }
        cv_.notify_one();
        done.get(); // rethrows what the host function threw
    }

  private:
    void loop() {
        for (;;) {
            std::packaged_task<void()> task;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                cv_.wait(lock, [&] { return !queue_.empty(); });
                task = std::move(queue_.front());
                queue_.pop_front();
            }
            task();
        }
    }
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::packaged_task<void()>> queue_;
};
HostFunctionThread& host_function_thread() {
    static auto* t = new HostFunctionThread;
    return *t;
}

std::atomic<unsigned> streams_created{0};
std::atomic<unsigned long long> host_functions_enqueued{0}, operations_enqueued{0};

[[noreturn]] void stall_forever() {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}
} // namespace

StreamSchedule new_stream_schedule() {
    StreamSchedule s;
    s.index = streams_created.fetch_add(1);
    s.state = settings().seed * 0x100000001b3ull + s.index;
    if (!settings().interleave) return s;
    // Each stream its own pace, so that under some seed a producer runs well behind its consumer.
    constexpr double kPaces[] = {0, 20e-6, 200e-6};
    s.mean_delay_s = kPaces[splitmix(s.state) % 3];
    return s;
}

std::function<void()> wrap_operation(StreamSchedule& schedule, std::function<void()> fn,
                                     bool host_function) {
    const Settings& set = settings();
    const bool stall =
        set.stall_at && (host_function || !set.stall_host_function) &&
        (set.stall_host_function ? host_functions_enqueued.fetch_add(1) + 1
                                 : operations_enqueued.fetch_add(1) + 1) == set.stall_at;
    if (stall) {
        std::fprintf(stderr, "shardlab emu: SHARDLAB_EMU_STALL: this %s will never return\n",
                     host_function ? "host function" : "stream operation");
        // The moment it starts (Unix time): tests measure the job's reaction from here, not from
        // its start, so a slower build (sanitizers) does not move the bound.
        fn = [] {
            const double now =
                std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                    .count();
            std::fprintf(stderr, "shardlab emu: SHARDLAB_EMU_STALL: stalled at %.3f\n", now);
            stall_forever();
        };
    }
    if (host_function && set.serial_host_functions)
        fn = [fn = std::move(fn)] { host_function_thread().run(fn); };
    if (schedule.mean_delay_s == 0) return fn;
    return [&schedule, fn = std::move(fn)] {
        // Exponential, capped: mostly short, sometimes several times the stream's pace.
        const double d = std::min(-schedule.mean_delay_s * std::log(1 - uniform(schedule.state)),
                                  8 * schedule.mean_delay_s);
        std::this_thread::sleep_for(std::chrono::duration<double>(d));
        fn();
    };
}

std::string schedule_description() {
    const Settings& s = settings();
    return std::string("streams ") +
           (s.interleave ? "interleave:" + std::to_string(s.seed) : std::string("issue")) +
           ", host functions " + (s.serial_host_functions ? "serial" : "free") +
           " (SHARDLAB_EMU_STREAMS, SHARDLAB_EMU_HOSTFN)";
}

} // namespace shardlab::emu
