// CUDA streams and events behind the Stream interface, and the CUDA device context.
#include "core/cuda/cuda_stream.h"

#include "core/cuda/cuda_check.h"
#include "core/device_context.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

namespace shardlab::cuda {

namespace {
// The device watchdog: the host waits for `e` (recorded on `stream`) by polling, so that a device
// that never gets there — a host function that never returns, a kernel that does not end, a
// collective whose peers do not come — is reported after the group's stall timeout instead of
// hanging the rank. Polling yields at first, then sleeps 50 us: what a wait may overshoot.
void watched_wait(cudaEvent_t e, const std::string& stream, const StreamGroupState& group) {
    const double limit = group.stall_timeout();
    if (limit <= 0) {
        check_cuda(cudaEventSynchronize(e), ("waiting for the " + stream + " stream").c_str());
        return;
    }
    const auto start = std::chrono::steady_clock::now();
    for (unsigned spins = 0;; ++spins) {
        const cudaError_t r = cudaEventQuery(e);
        if (r != cudaErrorNotReady) {
            check_cuda(r, ("waiting for the " + stream + " stream").c_str());
            return;
        }
        (void)cudaGetLastError(); // "not ready" is not an error
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited > limit) {
            int device = 0;
            cudaGetDevice(&device);
            const std::string activity = group.activity();
            char head[160]; // no fmt here: nvcc 13's front end rejects its format checks
            std::snprintf(head, sizeof(head),
                          "device watchdog: waited %.1f s for the %s stream of cuda:%d", waited,
                          stream.c_str(), device);
            char tail[64];
            std::snprintf(tail, sizeof(tail), " (--collective-timeout %g s; 0 waits forever)",
                          limit);
            throw Error(std::string(head) +
                        " and it has not got there: a host function that never returns, a kernel "
                        "that does not end, or a collective whose peers do not come. The last "
                        "collective this device was given: " +
                        (activity.empty() ? "none" : activity) + tail);
        }
        if (spins < 256)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}
} // namespace

CudaEvent::CudaEvent(cudaStream_t s, std::shared_ptr<EventPool> pool,
                     std::shared_ptr<StreamGroupState> group, std::string stream)
    : pool_(std::move(pool)), event_(pool_->take()), group_(std::move(group)),
      stream_(std::move(stream)) {
    const cudaError_t e = cudaEventRecord(event_, s);
    if (e != cudaSuccess) pool_->give(event_);
    check_cuda(e, "cudaEventRecord");
}

CudaEvent::~CudaEvent() {
    pool_->give(event_); // nobody holds this point any more: the handle may be recorded again
}

bool CudaEvent::query() const {
    const cudaError_t e = cudaEventQuery(event_);
    if (e == cudaErrorNotReady) {
        // "Not ready" is also left as the thread's last error: clear it, or the next kernel
        // launch's check would report it.
        (void)cudaGetLastError();
        return false;
    }
    check_cuda(e, "cudaEventQuery");
    return true;
}

void CudaEvent::synchronize() {
    watched_wait(event_, stream_, *group_);
    group_->rethrow_if_failed();
}

double CudaEvent::seconds_since(const Event& earlier) const {
    const auto* e = dynamic_cast<const CudaEvent*>(&earlier);
    check(e != nullptr, "internal: timing a CUDA event against another backend's event");
    check(pool_->timed() && e->pool_->timed(), "internal: timing an event recorded untimed");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, e->event_, event_), "cudaEventElapsedTime");
    return double(ms) * 1e-3;
}

CudaStream::CudaStream(std::string name, int device, std::shared_ptr<StreamGroupState> group)
    : name_(std::move(name)), device_(device), group_(std::move(group)) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    // Non-blocking: never implicitly ordered with the legacy default stream.
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    signal_ = std::make_shared<HostSignal>();
}

CudaStream::~CudaStream() {
    if (!abandoned_) cudaStreamSynchronize(stream_);
    // Abandoned, a copy may still read a slot, and freeing pinned memory waits for the device.
    if (abandoned_) (void)staging_.release();
    cudaStreamDestroy(stream_); // returns at once; CUDA releases the stream when its work is done
}

// Host functions not yet started see the failed group and return at once; kernels and copies run to
// their end on their own. What cannot be waited for is a stream waiting for a host stream blocked
// on a peer.
bool CudaStream::abandon(double patience_s) {
    abandoned_ = true;
    if (!group_->failed())
        group_->fail(std::make_exception_ptr(Error("the " + name_ + " stream was abandoned")));
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(patience_s);
    while (cudaStreamQuery(stream_) == cudaErrorNotReady) {
        (void)cudaGetLastError(); // "not ready" is not an error
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    (void)cudaGetLastError();
    return true;
}

EventPtr CudaStream::record() {
    return std::make_shared<CudaEvent>(stream_, timed_, group_, name_);
}

EventPtr CudaStream::record_untimed() {
    return std::make_shared<CudaEvent>(stream_, untimed_, group_, name_);
}

void CudaStream::wait(const EventPtr& e) {
    if (auto* cuda = dynamic_cast<CudaEvent*>(e.get())) {
        check_cuda(cudaStreamWaitEvent(stream_, cuda->handle(), 0), "cudaStreamWaitEvent");
        return;
    }
    // A host stream's event: the stream waits on memory that the event's completion writes (no host
    // function waits), and this stream's group fails if that stream failed.
    auto* cpu = dynamic_cast<CpuEvent*>(e.get());
    check(cpu != nullptr, "internal: the " + name_ + " stream was given an event of no known kind");
    const std::uint32_t ticket = signal_->wait(stream_);
    cpu->then([signal = signal_, group = group_, ticket](std::exception_ptr error) {
        if (error) group->fail(error);
        signal->done(ticket);
    });
}

void CudaStream::synchronize() {
    record_untimed()->synchronize(); // watched, as every host wait for the device
}

namespace {
struct HostTask {
    std::function<void()> fn;
    std::shared_ptr<StreamGroupState> group;
};

// Runs on CUDA's host-function thread, which must not call CUDA: the task is plain host work.
void run_host_task(void* p) {
    std::unique_ptr<HostTask> t(static_cast<HostTask*>(p));
    if (t->group->failed()) return;
    try {
        t->fn();
    } catch (...) {
        t->group->fail(std::current_exception());
    }
}
} // namespace

void CudaStream::enqueue(std::function<void()> fn) {
    auto* t = new HostTask{std::move(fn), group_};
    const cudaError_t e = cudaLaunchHostFunc(stream_, run_host_task, t);
    if (e != cudaSuccess) delete t;
    check_cuda(e, "cudaLaunchHostFunc");
}

void CudaStream::memcpy(void* dst, const void* src, std::size_t bytes) {
    if (bytes == 0 || dst == src) return;
    // Into pageable memory the copy returns only once it is done: wait first, watched, so that a
    // stalled stream is reported rather than hanging inside cudaMemcpyAsync.
    cudaPointerAttributes a{};
    check_cuda(cudaPointerGetAttributes(&a, dst), "cudaPointerGetAttributes");
    if (a.type == cudaMemoryTypeUnregistered) synchronize();
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
}

void CudaStream::upload(void* dst, const void* host_src, std::size_t bytes) {
    if (bytes == 0) return;
    auto watched = [this](cudaEvent_t e) { watched_wait(e, name_, *group_); };
    if (staging_->upload(dst, host_src, bytes, stream_, watched)) return; // small: pinned slots
    // A large upload (initial parameters; a micro-batch of over 128 Ki tokens): from pageable
    // memory CUDA stages the data before cudaMemcpyAsync returns, so the caller may reuse it at
    // once; pinned memory is read later, so it is first copied into pageable memory.
    cudaPointerAttributes a{};
    check_cuda(cudaPointerGetAttributes(&a, host_src), "cudaPointerGetAttributes");
    if (a.type == cudaMemoryTypeUnregistered) {
        check_cuda(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_),
                   "cudaMemcpyAsync");
        return;
    }
    std::vector<char> pageable(static_cast<const char*>(host_src),
                               static_cast<const char*>(host_src) + bytes);
    check_cuda(cudaMemcpyAsync(dst, pageable.data(), bytes, cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync");
}

cudaStream_t stream_of(Stream& s) {
    auto* c = dynamic_cast<CudaStream*>(&s);
    check(c != nullptr,
          "internal: a CUDA op was given the " + s.name() + " stream of another backend");
    return c->handle();
}

} // namespace shardlab::cuda

namespace shardlab {

std::unique_ptr<DeviceContext> make_cuda_context(int device) {
    auto group = std::make_shared<StreamGroupState>();
    auto make = [&](const char* name) {
        return std::make_unique<cuda::CudaStream>(name, device, group);
    };
    return std::make_unique<DeviceContext>(Device::cuda(device), make("compute"), make("comm"),
                                           make("copy"));
}

} // namespace shardlab
