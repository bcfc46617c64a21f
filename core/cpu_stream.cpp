// Worker-thread streams and events with completion times.
#include "core/cpu_stream.h"

#include "core/error.h"
#include "core/timer.h"

#include <chrono>
#include <cstring>
#include <pthread.h>
#include <vector>

namespace shardlab {

void StreamGroupState::fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::move(e);
    failed_.store(true, std::memory_order_release);
}

void StreamGroupState::rethrow_if_failed() const {
    if (!failed()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    std::rethrow_exception(error_);
}

std::exception_ptr StreamGroupState::error() const {
    if (!failed()) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
}

void StreamGroupState::note_activity(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    activity_ = what;
}

std::string StreamGroupState::activity() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return activity_;
}

bool CpuEvent::query() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
}

void CpuEvent::complete() {
    std::vector<std::function<void(std::exception_ptr)>> then;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        done_ = true;
        time_ = now_seconds();
        then.swap(then_);
    }
    cv_.notify_all();
    for (auto& fn : then) fn(group_->error());
}

void CpuEvent::then(std::function<void(std::exception_ptr)> fn) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!done_) {
            then_.push_back(std::move(fn));
            return;
        }
    }
    fn(group_->error());
}

void CpuEvent::wait_complete() const {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
}

void CpuEvent::synchronize() {
    wait_complete();
    group_->rethrow_if_failed();
}

double CpuEvent::seconds_since(const Event& earlier) const {
    const auto* e = dynamic_cast<const CpuEvent*>(&earlier);
    check(e != nullptr, "internal: timing a CPU event against another backend's event");
    check(query() && e->query(), "internal: timing events that have not completed");
    std::scoped_lock lock(mutex_, e->mutex_);
    return time_ - e->time_;
}

CpuStream::CpuStream(std::string name, std::shared_ptr<StreamGroupState> group,
                     const std::function<void()>& thread_init)
    : name_(std::move(name)), q_(std::make_shared<Queue>()) {
    q_->group = std::move(group);
    worker_ = std::thread([q = q_, thread_init, name = "sl-" + name_] {
        pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); // as top -H shows it
        if (thread_init) thread_init();
        run(*q);
    });
}

CpuStream::~CpuStream() {
    if (joined_) return;
    {
        std::lock_guard<std::mutex> lock(q_->mutex);
        q_->stop = true;
    }
    q_->cv.notify_all();
    worker_.join(); // runs what is queued first: destroying a stream drains it
}

void CpuStream::push(Task t) {
    {
        std::lock_guard<std::mutex> lock(q_->mutex);
        check(!q_->stop, "internal: work enqueued on stream '" + name_ + "' after it stopped");
        q_->tasks.push_back(std::move(t));
    }
    q_->cv.notify_all();
}

void CpuStream::run(Queue& q) {
    for (;;) {
        Task t;
        {
            std::unique_lock<std::mutex> lock(q.mutex);
            q.cv.wait(lock, [&] { return q.stop || !q.tasks.empty(); });
            if (q.tasks.empty()) return;
            t = std::move(q.tasks.front());
            q.tasks.pop_front();
            q.running = 1;
        }
        const bool skip = t.kind == Kind::work ? q.cancelled.load() || q.group->failed()
                                               : t.kind == Kind::wait && q.cancelled.load();
        if (!skip) {
            try {
                t.fn();
            } catch (...) {
                q.group->fail(std::current_exception());
            }
        }
        {
            std::lock_guard<std::mutex> lock(q.mutex);
            q.running = 0;
        }
        q.cv.notify_all();
    }
}

EventPtr CpuStream::record() {
    auto e = std::make_shared<CpuEvent>(q_->group);
    push({[e] { e->complete(); }, Kind::mark});
    return e;
}

void CpuStream::wait(const EventPtr& e) {
    if (auto cpu = std::dynamic_pointer_cast<CpuEvent>(e)) {
        push({[cpu] { cpu->wait_complete(); }, Kind::wait});
        return;
    }
    // Another backend's event (a GPU's): the worker waits for it, and fails with its stream.
    push({[e] { e->synchronize(); }, Kind::wait});
}

void CpuStream::synchronize() {
    record()->synchronize();
}

void CpuStream::enqueue(std::function<void()> fn) {
    push({std::move(fn), Kind::work});
}

void CpuStream::memcpy(void* dst, const void* src, std::size_t bytes) {
    if (bytes == 0 || dst == src) return;
    enqueue([=] { std::memcpy(dst, src, bytes); });
}

void CpuStream::upload(void* dst, const void* host_src, std::size_t bytes) {
    if (bytes == 0) return;
    auto copy = std::make_shared<std::vector<char>>(static_cast<const char*>(host_src),
                                                    static_cast<const char*>(host_src) + bytes);
    enqueue([dst, copy] { std::memcpy(dst, copy->data(), copy->size()); });
}

bool CpuStream::abandon(double patience_s) {
    if (joined_) return true;
    q_->cancelled.store(true);
    {
        std::unique_lock<std::mutex> lock(q_->mutex);
        q_->stop = true;
        q_->cv.notify_all();
        q_->cv.wait_for(lock, std::chrono::duration<double>(patience_s),
                        [&] { return q_->tasks.empty() && q_->running == 0; });
        if (!(q_->tasks.empty() && q_->running == 0)) {
            lock.unlock();
            worker_.detach();
            joined_ = true;
            return false;
        }
    }
    worker_.join();
    joined_ = true;
    return true;
}

} // namespace shardlab
