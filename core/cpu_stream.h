// The CPU backend's streams: each an in-order queue of host tasks run by its own worker thread,
// so compute, collectives and copies overlap on a CPU as they do on a GPU. A task that throws
// poisons every stream of its group (like CUDA's sticky errors): later tasks are skipped, events
// still complete (nobody waits forever), and the next synchronize() rethrows the first error.
#pragma once

#include "core/stream.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shardlab {

// What the streams of one device share: the first error any of them raised.
class StreamGroupState {
  public:
    void fail(std::exception_ptr e);
    bool failed() const { return failed_.load(std::memory_order_acquire); }
    void rethrow_if_failed() const;
    std::exception_ptr error() const;

    // The device watchdog's limit and what it names (Stream::set_stall_timeout, note_activity).
    void set_stall_timeout(double seconds) { stall_timeout_s_.store(seconds); }
    double stall_timeout() const { return stall_timeout_s_.load(); }
    void note_activity(const std::string& what);
    std::string activity() const;

  private:
    mutable std::mutex mutex_;
    std::exception_ptr error_;
    std::atomic<bool> failed_{false};
    std::atomic<double> stall_timeout_s_{0};
    std::string activity_;
};

class CpuEvent : public Event {
  public:
    explicit CpuEvent(std::shared_ptr<StreamGroupState> group) : group_(std::move(group)) {}
    bool query() const override;
    void synchronize() override;
    double seconds_since(const Event& earlier) const override;

    void complete(); // called by the stream's worker when it reaches this point
    void wait_complete() const;
    // Runs fn(the group's error, or null) once the event has completed: at once if it has, else
    // on the worker that completes it, which must not wait for anything (a GPU stream's wait
    // for this event is such a function: it writes a word of pinned memory).
    void then(std::function<void(std::exception_ptr)> fn);

  private:
    std::shared_ptr<StreamGroupState> group_;
    mutable std::mutex mutex_;
    mutable std::condition_variable cv_;
    bool done_ = false;
    std::vector<std::function<void(std::exception_ptr)>> then_;
    double time_ = 0; // seconds on a monotonic clock, when the stream reached this point
};

class CpuStream : public Stream {
  public:
    // thread_init runs first on the worker thread (e.g. to set its OpenMP thread count).
    CpuStream(std::string name, std::shared_ptr<StreamGroupState> group,
              const std::function<void()>& thread_init = {});
    ~CpuStream() override;
    CpuStream(const CpuStream&) = delete;
    CpuStream& operator=(const CpuStream&) = delete;

    const std::string& name() const override { return name_; }
    EventPtr record() override;
    void wait(const EventPtr& e) override;
    void synchronize() override;
    void enqueue(std::function<void()> fn) override;
    void memcpy(void* dst, const void* src, std::size_t bytes) override;
    void upload(void* dst, const void* host_src, std::size_t bytes) override;

    // Skips the tasks not yet started and stops the worker without waiting for the running one
    // for longer than `patience_s` (it may be blocked on a peer that is gone). Returns false when
    // the worker had to be left running: its memory must then never be freed.
    bool abandon(double patience_s) override;

  private:
    // After an error only marks and waits run (so no stream waits forever for a skipped mark);
    // once abandoned, only marks.
    enum class Kind { work, mark, wait };
    struct Task {
        std::function<void()> fn;
        Kind kind = Kind::work;
    };
    // The queue and its worker's state, shared with the worker thread so that a worker left
    // running by abandon() never touches freed memory.
    struct Queue {
        std::shared_ptr<StreamGroupState> group;
        std::mutex mutex;
        std::condition_variable cv;
        std::deque<Task> tasks;
        std::size_t running = 0; // tasks popped and not yet finished (0 or 1)
        bool stop = false;
        std::atomic<bool> cancelled{false};
    };
    void push(Task t);
    static void run(Queue& q);

    std::string name_;
    std::shared_ptr<Queue> q_;
    std::thread worker_;
    bool joined_ = false;
};

} // namespace shardlab
