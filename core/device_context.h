// DeviceContext: what one rank computes with on one device — the device, its three streams
// (compute: model ops and on-device updates; comm: collectives; copy: host <-> device transfers)
// and its tracked, stream-ordered memory. Made once per process by the backend factory and passed
// by reference; nothing here is global.
#pragma once

#include "core/device.h"
#include "core/memory_tracker.h"
#include "core/stream.h"

#include <functional>
#include <memory>

namespace shardlab {

class Tracer;

class DeviceContext {
  public:
    DeviceContext(Device device, std::unique_ptr<Stream> compute, std::unique_ptr<Stream> comm,
                  std::unique_ptr<Stream> copy);
    // Drains every stream first. When unwinding from an error, streams are abandoned instead
    // (their queued work skipped) and memory a stuck task may touch is never freed.
    ~DeviceContext();
    DeviceContext(const DeviceContext&) = delete;
    DeviceContext& operator=(const DeviceContext&) = delete;

    const Device& device() const { return device_; }
    Stream& compute() { return *compute_; }
    Stream& comm() { return *comm_; }
    Stream& copy() { return *copy_; }
    MemoryTracker& tracker() { return tracker_; }
    void synchronize(); // all three streams
    // The run's --trace recorder (core/tracer.h), or null; not owned. Whoever enqueues work on
    // these streams may add spans to it.
    Tracer* tracer() const { return tracer_; }
    void set_tracer(Tracer* t) { tracer_ = t; }

  private:
    Device device_;
    MemoryTracker tracker_; // declared before the streams: destroyed after they drained
    std::unique_ptr<Stream> compute_, comm_, copy_;
    Tracer* tracer_ = nullptr;
};

// Three worker-thread streams on the CPU; thread_init(stream name) runs first on each worker.
std::unique_ptr<DeviceContext>
make_cpu_context(const std::function<void(const std::string&)>& thread_init = {});

// Three CUDA streams on GPU `device` (core/cuda/cuda_stream.h); device memory, pinned host
// memory. An Error naming the build to make in a build without CUDA.
std::unique_ptr<DeviceContext> make_cuda_context(int device);

} // namespace shardlab
