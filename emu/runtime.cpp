// The emulated device behind emu/include/cuda_runtime.h: memory (device allocations are host
// memory the emulator keeps a registry of, so copies know their direction), streams as in-order
// worker threads (core/cpu_stream.h), events, launches checked against an sm_90-like device, and
// CUDA's error rules — a launch error is returned by cudaGetLastError once; a fault inside a
// kernel is sticky: every later call reports it.
#include "core/cpu_stream.h"
#include "emu/include/cuda.h"
#include "emu/include/cuda_runtime.h"
#include "emu/stream_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

struct EmuStream {
    std::unique_ptr<shardlab::CpuStream> stream;
    bool blocking = true; // false: cudaStreamNonBlocking, which cudaMemcpy does not wait for
    shardlab::emu::StreamSchedule schedule = shardlab::emu::new_stream_schedule();
};
struct EmuEvent {
    shardlab::EventPtr mark; // the last record
    bool timing = true;
};

namespace shardlab::emu {

namespace {
constexpr std::size_t kSharedDefault = 48 * 1024, kSharedOptin = 227 * 1024; // an H100's

// The one emulated GPU of this process, and the errors CUDA would report. SHARDLAB_EMU_GPUS=N makes
// it report N devices (all the same one); SHARDLAB_EMU_MEMORY=BYTES its memory (default 16 GiB),
// so tests can run a rank out of it; SHARDLAB_EMU_SHARED_OPTIN=BYTES the shared memory a block may
// opt in to (default an H100's 227 KiB; an sm_86/89 GPU has 99 KiB).
struct Device {
    std::mutex mutex;
    std::map<std::uintptr_t, std::size_t> device_allocs, pinned_allocs; // start -> bytes
    std::size_t allocated = 0;
    std::shared_ptr<StreamGroupState> group = std::make_shared<StreamGroupState>();
    std::unique_ptr<EmuStream> default_stream;
    cudaError_t sticky = cudaSuccess;
    std::string fault;
    std::map<const void*, int> max_dynamic_shared;
    std::set<EmuStream*> streams; // every stream created and not yet destroyed
    Stats stats;
    int count = 1;
    std::set<int> contexts; // devices whose context a call created (CUDA 12: cudaSetDevice does)
    std::size_t capacity = std::size_t(16) << 30; // what cudaMemGetInfo says is there
    std::size_t shared_optin = kSharedOptin;

    Device() {
        if (const char* n = std::getenv("SHARDLAB_EMU_GPUS")) count = std::max(0, std::atoi(n));
        if (const char* m = std::getenv("SHARDLAB_EMU_MEMORY")) capacity = std::stoull(m);
        if (const char* o = std::getenv("SHARDLAB_EMU_SHARED_OPTIN")) shared_optin = std::stoull(o);
        default_stream = std::make_unique<EmuStream>();
        default_stream->stream = std::make_unique<CpuStream>("emu-default", group);
    }
    // SHARDLAB_EMU_STATS=PATH: the process's Stats, appended to PATH as one JSON line at exit.
    ~Device() {
        const char* path = std::getenv("SHARDLAB_EMU_STATS");
        if (!path) return;
        if (std::FILE* f = std::fopen(path, "a")) {
            std::fprintf(
                f,
                "{\"kernel_launches\": %llu, \"device_synchronizations\": %llu, "
                "\"blocking_copies\": %llu, \"mallocs\": %llu, \"frees\": %llu, "
                "\"pageable_uploads\": %llu, \"event_creates\": %llu, \"event_records\": %llu}\n",
                (unsigned long long)stats.kernel_launches,
                (unsigned long long)stats.device_synchronizations,
                (unsigned long long)stats.blocking_copies, (unsigned long long)stats.mallocs,
                (unsigned long long)stats.frees, (unsigned long long)stats.pageable_uploads,
                (unsigned long long)stats.event_creates, (unsigned long long)stats.event_records);
            std::fclose(f);
        }
    }
};
Device& device() {
    static Device d;
    return d;
}
thread_local cudaError_t last_error = cudaSuccess;
thread_local int current_device = 0;

cudaError_t fail(cudaError_t e, const std::string& why = "") {
    if (!why.empty()) {
        std::lock_guard<std::mutex> lock(device().mutex);
        device().fault = why;
    }
    last_error = e;
    return e;
}

bool in(const std::map<std::uintptr_t, std::size_t>& allocs, const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = allocs.upper_bound(a);
    if (it == allocs.begin()) return false;
    --it;
    return a < it->first + std::max<std::size_t>(it->second, 1);
}
bool is_device(const void* p) {
    std::lock_guard<std::mutex> lock(device().mutex);
    return in(device().device_allocs, p);
}
bool is_pageable(const void* p) {
    std::lock_guard<std::mutex> lock(device().mutex);
    return !in(device().device_allocs, p) && !in(device().pinned_allocs, p);
}

EmuStream& emu_stream(cudaStream_t s) {
    return *(s ? s : device().default_stream.get());
}
CpuStream& stream(cudaStream_t s) {
    return *emu_stream(s).stream;
}
// Every stream operation enters the stream here, as emu/stream_model.h models it.
void submit(cudaStream_t s, std::function<void()> fn, bool host_function = false) {
    EmuStream& e = emu_stream(s);
    e.stream->enqueue(wrap_operation(e.schedule, std::move(fn), host_function));
}

// Every stream (what cudaDeviceSynchronize and cudaFree wait for), or only the default stream and
// the blocking ones (what cudaMemcpy waits for, as CUDA's legacy default stream does). The training
// path makes neither call: Stats counts them to prove it.
void synchronize_all(bool only_blocking = false) {
    std::vector<CpuStream*> all;
    {
        std::lock_guard<std::mutex> lock(device().mutex);
        all.push_back(device().default_stream->stream.get());
        for (EmuStream* s : device().streams)
            if (s->blocking || !only_blocking) all.push_back(s->stream.get());
    }
    for (CpuStream* s : all) s->synchronize();
}

// A kernel or stand-in task that failed: the device's sticky error from now on, with its message.
void record_fault(const std::exception& e) {
    const std::string what = e.what();
    std::lock_guard<std::mutex> lock(device().mutex);
    if (device().sticky != cudaSuccess) return;
    device().sticky = what.find("misaligned") != std::string::npos ? cudaErrorMisalignedAddress
                                                                   : cudaErrorLaunchFailure;
    device().fault = what;
    std::fprintf(stderr, "shardlab emu: device fault under %s: %s\n",
                 schedule_description().c_str(), what.c_str());
}

void count(std::uint64_t Stats::*counter) {
    std::lock_guard<std::mutex> lock(device().mutex);
    ++(device().stats.*counter);
}

cudaError_t sticky() {
    std::lock_guard<std::mutex> lock(device().mutex);
    return device().sticky;
}

// Stream work that records its failure as the device's sticky error before the stream's group
// skips what follows (as every later CUDA call fails after a fault).
std::function<void()> faulting(std::function<void()> fn) {
    return [fn = std::move(fn)] {
        try {
            fn();
        } catch (const std::exception& e) {
            record_fault(e);
            throw;
        }
    };
}

// Waits for a stream or event; a fault some task raised is the device's sticky error.
template <typename Wait>
cudaError_t wait_for(Wait&& wait) {
    if (sticky() != cudaSuccess) return last_error = sticky();
    try {
        wait();
        return cudaSuccess;
    } catch (const std::exception& e) {
        record_fault(e);
        return last_error = sticky();
    }
}

void* aligned(std::size_t bytes) {
    return std::aligned_alloc(256, std::max<std::size_t>(256, (bytes + 255) / 256 * 256));
}
} // namespace

namespace {
thread_local bool in_host_function = false; // this thread runs a cudaLaunchHostFunc function

// CUDA forbids CUDA calls inside a host function (cudaLaunchHostFunc): on a GPU they can deadlock
// or fail. The emulator refuses them, naming the call; the error fails the host function's stream.
void refuse_in_host_function(const char* call) {
    if (in_host_function)
        throw std::logic_error(std::string(call) +
                               " called inside a host function (cudaLaunchHostFunc), where CUDA "
                               "forbids CUDA calls: do it before enqueueing the function");
}

// Marks this thread as running a host function for the scope's life.
struct HostFunctionScope {
    HostFunctionScope() { in_host_function = true; }
    ~HostFunctionScope() { in_host_function = false; }
    HostFunctionScope(const HostFunctionScope&) = delete;
    HostFunctionScope& operator=(const HostFunctionScope&) = delete;
};
} // namespace

bool check_launch(const char* name, const void* kernel, dim3 g, dim3 b, std::size_t smem) {
    if (in_host_function)
        refuse_in_host_function((std::string("launching kernel ") + name).c_str());
    std::string why;
    const unsigned long long threads = 1ull * b.x * b.y * b.z;
    if (g.x == 0 || g.y == 0 || g.z == 0 || threads == 0)
        why = "an empty grid or block";
    else if (threads > 1024)
        why = "a block of " + std::to_string(threads) + " threads (at most 1024)";
    else if (b.x > 1024 || b.y > 1024 || b.z > 64)
        why = "a block dimension over its limit (1024, 1024, 64)";
    else if (g.y > 65535 || g.z > 65535)
        why = "a grid y or z over 65535";
    else {
        int limit = int(kSharedDefault);
        {
            std::lock_guard<std::mutex> lock(device().mutex);
            auto it = device().max_dynamic_shared.find(kernel);
            if (it != device().max_dynamic_shared.end()) limit = it->second;
        }
        if (smem > std::size_t(limit))
            why = std::to_string(smem) + " bytes of dynamic shared memory (at most " +
                  std::to_string(limit) +
                  " without cudaFuncSetAttribute(MaxDynamicSharedMemorySize))";
    }
    if (why.empty()) return true;
    fail(cudaErrorInvalidConfiguration, std::string("launch of ") + name + ": " + why);
    return false;
}

void enqueue_grid(cudaStream_t s, const char* name, dim3 grid, dim3 block, std::size_t smem,
                  std::function<void()> body) {
    count(&Stats::kernel_launches);
    submit(s, faulting([name, grid, block, smem, body = std::move(body)] {
               run_grid(name, grid, block, smem, body);
           }));
}

void enqueue(cudaStream_t s, std::function<void()> fn) {
    refuse_in_host_function("a cuBLAS or NCCL call");
    submit(s, faulting(std::move(fn)));
}

Stats stats() {
    std::lock_guard<std::mutex> lock(device().mutex);
    return device().stats;
}

int contexts_created() {
    std::lock_guard<std::mutex> lock(device().mutex);
    return int(device().contexts.size());
}

std::size_t set_shared_optin(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(device().mutex);
    return std::exchange(device().shared_optin, bytes);
}

const char* last_fault() {
    std::lock_guard<std::mutex> lock(device().mutex);
    return device().fault.c_str();
}

void reset_device() {
    Device& d = device();
    d.default_stream.reset();
    std::lock_guard<std::mutex> lock(d.mutex);
    d.group = std::make_shared<StreamGroupState>();
    d.default_stream = std::make_unique<EmuStream>();
    d.default_stream->stream = std::make_unique<CpuStream>("emu-default", d.group);
    d.sticky = cudaSuccess;
    d.fault.clear();
    d.max_dynamic_shared.clear();
    last_error = cudaSuccess;
}

} // namespace shardlab::emu

using namespace shardlab::emu;

// --- errors -------------------------------------------------------------------------------------

const char* cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
        return "cudaErrorInvalidConfiguration";
    case cudaErrorNoDevice:
        return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
        return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
        return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
        return "cudaErrorNotReady";
    case cudaErrorMisalignedAddress:
        return "cudaErrorMisalignedAddress";
    case cudaErrorLaunchFailure:
        return "cudaErrorLaunchFailure";
    }
    return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case cudaErrorNotReady:
        return "device not ready";
    case cudaErrorMisalignedAddress:
        return "misaligned address";
    case cudaErrorLaunchFailure:
        return "unspecified launch failure";
    }
    return "unknown error";
}

cudaError_t cudaGetLastError() {
    if (sticky() != cudaSuccess) return sticky();
    return std::exchange(last_error, cudaSuccess);
}

cudaError_t cudaPeekAtLastError() {
    return sticky() != cudaSuccess ? sticky() : last_error;
}

// --- devices ------------------------------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int* count) {
    *count = device().count;
    return device().count > 0 ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaDeviceGetPCIBusId(char* id, int len, int d) {
    if (d < 0 || d >= device().count) return fail(cudaErrorInvalidDevice);
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const int first = visible && *visible ? std::atoi(visible) : 0;
    std::snprintf(id, std::size_t(len), "0000:%02x:00.0", (first + d) & 0xff);
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d) {
    refuse_in_host_function("cudaSetDevice");
    if (d < 0 || d >= device().count) return fail(cudaErrorInvalidDevice);
    current_device = d;
    std::lock_guard<std::mutex> lock(device().mutex);
    device().contexts.insert(d);
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int* d) {
    *d = current_device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
    if (d < 0 || d >= device().count) return fail(cudaErrorInvalidDevice);
    *p = cudaDeviceProp{};
    std::strncpy(p->name, "shardlab SIMT emulator (sm_90 limits, on the CPU)", sizeof(p->name) - 1);
    p->totalGlobalMem = device().capacity;
    p->sharedMemPerBlock = kSharedDefault;
    p->sharedMemPerBlockOptin = device().shared_optin;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
    p->multiProcessorCount = int(std::max(1u, std::thread::hardware_concurrency()));
    p->major = 9, p->minor = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int d) {
    if (d < 0 || d >= device().count) return fail(cudaErrorInvalidDevice);
    if (attr != cudaDevAttrMaxSharedMemoryPerBlockOptin) return fail(cudaErrorInvalidValue);
    *value = int(device().shared_optin);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
    refuse_in_host_function("cudaMemGetInfo");
    std::lock_guard<std::mutex> lock(device().mutex);
    device().contexts.insert(current_device);
    *total = device().capacity;
    *free = device().capacity - std::min(device().capacity, device().allocated);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
    refuse_in_host_function("cudaDeviceSynchronize");
    count(&Stats::device_synchronizations);
    return wait_for([] { synchronize_all(); });
}

// --- memory -------------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** p, std::size_t bytes) {
    refuse_in_host_function("cudaMalloc");
    count(&Stats::mallocs);
    std::lock_guard<std::mutex> lock(device().mutex);
    if (device().allocated + bytes > device().capacity)
        return last_error = cudaErrorMemoryAllocation;
    *p = aligned(bytes);
    if (!*p) return last_error = cudaErrorMemoryAllocation;
    device().device_allocs[reinterpret_cast<std::uintptr_t>(*p)] = bytes;
    device().allocated += bytes;
    return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
    refuse_in_host_function("cudaFree");
    if (!p) return cudaSuccess;
    count(&Stats::frees);
    wait_for([] { synchronize_all(); }); // CUDA frees only once the device is idle
    std::lock_guard<std::mutex> lock(device().mutex);
    auto it = device().device_allocs.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == device().device_allocs.end()) return last_error = cudaErrorInvalidValue;
    device().allocated -= it->second;
    device().device_allocs.erase(it);
    std::free(p);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** p, std::size_t bytes, unsigned) {
    refuse_in_host_function("cudaHostAlloc");
    count(&Stats::mallocs);
    *p = aligned(bytes);
    if (!*p) return last_error = cudaErrorMemoryAllocation;
    std::lock_guard<std::mutex> lock(device().mutex);
    device().pinned_allocs[reinterpret_cast<std::uintptr_t>(*p)] = bytes;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void* p) {
    refuse_in_host_function("cudaFreeHost");
    if (!p) return cudaSuccess;
    count(&Stats::frees);
    wait_for([] { synchronize_all(); });
    std::lock_guard<std::mutex> lock(device().mutex);
    if (!device().pinned_allocs.erase(reinterpret_cast<std::uintptr_t>(p)))
        return last_error = cudaErrorInvalidValue;
    std::free(p);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
    refuse_in_host_function("cudaPointerGetAttributes");
    *a = cudaPointerAttributes{};
    a->type = is_device(p)     ? cudaMemoryTypeDevice
              : is_pageable(p) ? cudaMemoryTypeUnregistered
                               : cudaMemoryTypeHost;
    a->device = current_device;
    a->devicePointer = a->type == cudaMemoryTypeDevice ? const_cast<void*>(p) : nullptr;
    a->hostPointer = a->type == cudaMemoryTypeHost ? const_cast<void*>(p) : nullptr;
    return cudaSuccess;
}

// --- streams, events, copies --------------------------------------------------------------------

cudaError_t cudaStreamCreate(cudaStream_t* s) {
    return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
    refuse_in_host_function("cudaStreamCreateWithFlags");
    *s = new EmuStream{std::make_unique<shardlab::CpuStream>("emu-stream", device().group),
                       (flags & cudaStreamNonBlocking) == 0};
    std::lock_guard<std::mutex> lock(device().mutex);
    device().streams.insert(*s);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    refuse_in_host_function("cudaStreamDestroy");
    if (!s) return last_error = cudaErrorInvalidResourceHandle;
    {
        std::lock_guard<std::mutex> lock(device().mutex);
        device().streams.erase(s);
    }
    delete s; // drains it first, as CUDA lets queued work finish
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    refuse_in_host_function("cudaStreamSynchronize");
    return wait_for([s] { stream(s).synchronize(); });
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
    refuse_in_host_function("cudaStreamQuery");
    if (sticky() != cudaSuccess) return sticky();
    // As CUDA does, "not ready" also becomes the thread's last error until cudaGetLastError.
    return stream(s).record()->query() ? cudaSuccess : last_error = cudaErrorNotReady;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
    refuse_in_host_function("cudaStreamWaitEvent");
    if (sticky() != cudaSuccess) return sticky();
    if (!e) return last_error = cudaErrorInvalidResourceHandle;
    if (e->mark) stream(s).wait(e->mark); // an event never recorded is complete
    return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* user) {
    refuse_in_host_function("cudaLaunchHostFunc");
    submit(s, faulting([fn, user] {
               const HostFunctionScope scope;
               fn(user);
           }),
           /*host_function=*/true);
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) {
    return cudaEventCreateWithFlags(e, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
    refuse_in_host_function("cudaEventCreateWithFlags");
    if (sticky() != cudaSuccess) return sticky();
    count(&Stats::event_creates);
    *e = new EmuEvent{nullptr, (flags & cudaEventDisableTiming) == 0};
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    refuse_in_host_function("cudaEventDestroy");
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    refuse_in_host_function("cudaEventRecord");
    if (sticky() != cudaSuccess) return sticky();
    if (!e) return last_error = cudaErrorInvalidResourceHandle;
    count(&Stats::event_records);
    e->mark = stream(s).record();
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
    refuse_in_host_function("cudaEventQuery");
    if (!e) return last_error = cudaErrorInvalidResourceHandle;
    if (sticky() != cudaSuccess) return sticky();
    return !e->mark || e->mark->query() ? cudaSuccess : last_error = cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    refuse_in_host_function("cudaEventSynchronize");
    if (!e) return last_error = cudaErrorInvalidResourceHandle;
    return wait_for([e] {
        if (e->mark) e->mark->synchronize();
    });
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    refuse_in_host_function("cudaEventElapsedTime");
    if (!start || !end || !start->timing || !end->timing || !start->mark || !end->mark)
        return last_error = cudaErrorInvalidResourceHandle;
    if (!start->mark->query() || !end->mark->query()) return last_error = cudaErrorNotReady;
    *ms = float(end->mark->seconds_since(*start->mark) * 1e3);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
    refuse_in_host_function("cudaMemcpy");
    count(&Stats::blocking_copies);
    const cudaError_t e = wait_for([] { synchronize_all(/*only_blocking=*/true); });
    if (e != cudaSuccess) return e;
    if (bytes) std::memmove(dst, src, bytes); // (an empty copy may name no buffer at all)
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind,
                            cudaStream_t s) {
    refuse_in_host_function("cudaMemcpyAsync");
    if (bytes == 0) return cudaSuccess;
    if (sticky() != cudaSuccess) return sticky();
    if (is_pageable(dst)) { // to pageable host memory: done when the call returns
        const cudaError_t e = cudaStreamSynchronize(s);
        if (e != cudaSuccess) return e;
        std::memmove(dst, src, bytes);
        return cudaSuccess;
    }
    if (is_pageable(src)) { // from pageable host memory: staged now, the caller may reuse it
        count(&Stats::pageable_uploads);
        auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                          static_cast<const char*>(src) + bytes);
        submit(s, [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
        return cudaSuccess;
    }
    // Device or pinned memory: read when the stream reaches the copy, not before.
    submit(s, [=] { std::memmove(dst, src, bytes); });
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t s) {
    refuse_in_host_function("cudaMemsetAsync");
    if (sticky() != cudaSuccess) return sticky();
    submit(s, faulting([=] { std::memset(dst, value, bytes); }));
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attr, int value) {
    refuse_in_host_function("cudaFuncSetAttribute");
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
        std::size_t(value) > device().shared_optin)
        return last_error = cudaErrorInvalidValue;
    std::lock_guard<std::mutex> lock(device().mutex);
    device().max_dynamic_shared[kernel] = value;
    return cudaSuccess;
}

// --- the driver API's stream memory operation ---------------------------------------------------

cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host, unsigned) {
    if (is_pageable(host) || is_device(host)) return last_error = cudaErrorInvalidValue;
    *device_ptr = host;
    return cudaSuccess;
}

namespace {
// A stream's wait for a word of host memory: the stream's worker polls it (a CpuStream wait, which
// runs even after a fault, so no stream waits for a skipped write).
class MemoryWait : public shardlab::Event {
  public:
    MemoryWait(const std::uint32_t* word, std::uint32_t value) : word_(word), value_(value) {}
    bool query() const override {
        auto* word = const_cast<std::uint32_t*>(word_); // atomic_ref<const T> is C++26
        const std::uint32_t now =
            std::atomic_ref<std::uint32_t>(*word).load(std::memory_order_acquire);
        return std::int32_t(now - value_) >= 0;
    }
    void synchronize() override {
        for (int spins = 0; !query(); ++spins)
            if (spins < 64)
                std::this_thread::yield();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    double seconds_since(const shardlab::Event&) const override { return 0; }

  private:
    const std::uint32_t* word_;
    std::uint32_t value_;
};
} // namespace

CUresult cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags) {
    refuse_in_host_function("cuStreamWaitValue32");
    const auto* word = reinterpret_cast<const std::uint32_t*>(addr);
    if (flags != CU_STREAM_WAIT_VALUE_GEQ || is_pageable(word)) return CUDA_ERROR_INVALID_VALUE;
    stream(s).wait(std::make_shared<MemoryWait>(word, value));
    return CUDA_SUCCESS;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned,
                                             unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
    const bool found = std::strcmp(symbol, "cuStreamWaitValue32") == 0;
    *fn = found ? reinterpret_cast<void*>(&cuStreamWaitValue32) : nullptr;
    if (status) *status = found ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}
