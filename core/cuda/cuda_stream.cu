// CUDA streams and events behind the Stream interface, and the CUDA device context.
#include "core/cuda/cuda_stream.h"

#include "core/cuda/cuda_check.h"
#include "core/device_context.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

namespace shardlab::cuda {

CudaEvent::CudaEvent(cudaStream_t s, std::shared_ptr<StreamGroupState> group)
    : group_(std::move(group)) {
    check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDefault), "cudaEventCreate");
    check_cuda(cudaEventRecord(event_, s), "cudaEventRecord");
}

CudaEvent::~CudaEvent() {
    cudaEventDestroy(event_); // CUDA frees it once the stream has passed it
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
    check_cuda(cudaEventSynchronize(event_), "cudaEventSynchronize");
    group_->rethrow_if_failed();
}

double CudaEvent::seconds_since(const Event& earlier) const {
    const auto* e = dynamic_cast<const CudaEvent*>(&earlier);
    check(e != nullptr, "internal: timing a CUDA event against another backend's event");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, e->event_, event_), "cudaEventElapsedTime");
    return double(ms) * 1e-3;
}

CudaStream::CudaStream(std::string name, int device, std::shared_ptr<StreamGroupState> group)
    : name_(std::move(name)), device_(device), group_(std::move(group)) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    // Non-blocking: never implicitly ordered with the legacy default stream.
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

CudaStream::~CudaStream() {
    if (!abandoned_) cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_); // returns at once; CUDA releases the stream when its work is done
}

// Host functions not yet started see the failed group and return at once; kernels and copies
// run to their end on their own. What cannot be waited for is a host function blocked on a peer.
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
    return std::make_shared<CudaEvent>(stream_, group_);
}

void CudaStream::wait(const EventPtr& e) {
    if (auto* cuda = dynamic_cast<CudaEvent*>(e.get())) {
        check_cuda(cudaStreamWaitEvent(stream_, cuda->handle(), 0), "cudaStreamWaitEvent");
        return;
    }
    // A host stream's event: a host function waits for it (a plain wait, no CUDA call), and
    // fails this stream's group if that stream failed.
    enqueue([e] { e->synchronize(); });
}

void CudaStream::synchronize() {
    check_cuda(cudaStreamSynchronize(stream_), ("synchronizing the " + name_ + " stream").c_str());
    group_->rethrow_if_failed();
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
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
}

void CudaStream::upload(void* dst, const void* host_src, std::size_t bytes) {
    if (bytes == 0) return;
    // From pageable memory CUDA stages the data before cudaMemcpyAsync returns, so the caller may
    // reuse it at once; pinned memory is read later, so it is first copied into pageable memory.
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
