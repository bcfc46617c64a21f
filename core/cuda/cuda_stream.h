// The CUDA backend's streams and events: Stream and Event (core/stream.h) over cudaStream_t and
// cudaEvent_t. Host tasks (Stream::enqueue) run through cudaLaunchHostFunc and share the CPU
// backend's sticky-error rule: a task that throws poisons the device's streams, later host tasks
// are skipped and the next synchronize() rethrows it. No host function ever waits: CUDA may run
// all of a process's host functions on one thread, so a stream waits for a host stream's event on
// memory (core/cuda/host_signal.h). The host's waits for the device are watched: past the stall
// timeout they report the stream and what the device was doing, and throw. Included by .cu files
// only.
#pragma once

#include "core/cpu_stream.h" // StreamGroupState
#include "core/cuda/event_pool.h"
#include "core/cuda/host_signal.h"
#include "core/cuda/upload_staging.h"
#include "core/stream.h"
#include "core/watched_stream.h"

#include <cuda_runtime.h>

#include <memory>
#include <string>

namespace shardlab::cuda {

class CudaEvent : public Event {
  public:
    // Records an event of `pool` on s. `stream`: the recording stream's name, for the watchdog's
    // report.
    CudaEvent(cudaStream_t s, std::shared_ptr<EventPool> pool,
              std::shared_ptr<StreamGroupState> group, std::string stream);
    ~CudaEvent() override; // gives the handle back to the pool
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    bool query() const override;
    void synchronize() override;
    double seconds_since(const Event& earlier) const override;
    cudaEvent_t handle() const { return event_; }

  private:
    std::shared_ptr<EventPool> pool_;
    cudaEvent_t event_ = nullptr;
    std::shared_ptr<StreamGroupState> group_;
    std::string stream_;
};

class CudaStream : public Stream, public WatchedStream {
  public:
    CudaStream(std::string name, int device, std::shared_ptr<StreamGroupState> group);
    ~CudaStream() override; // waits for the stream to drain, as CpuStream does
    CudaStream(const CudaStream&) = delete;
    CudaStream& operator=(const CudaStream&) = delete;

    const std::string& name() const override { return name_; }
    EventPtr record() override;
    EventPtr record_untimed() override;
    void wait(const EventPtr& e) override;
    void synchronize() override;
    void enqueue(std::function<void()> fn) override;
    void memcpy(void* dst, const void* src, std::size_t bytes) override;
    void upload(void* dst, const void* host_src, std::size_t bytes) override;
    bool abandon(double patience_s) override;
    void set_stall_timeout(double timeout_s) override { group_->set_stall_timeout(timeout_s); }
    void note_activity(const std::string& what) override { group_->note_activity(what); }

    cudaStream_t handle() const { return stream_; }
    int device() const { return device_; }

  private:
    std::string name_;
    int device_ = 0;
    cudaStream_t stream_ = nullptr;
    std::shared_ptr<StreamGroupState> group_;
    std::shared_ptr<HostSignal> signal_; // shared with the host events' writers
    // Events reused across records (event_pool.h): timed ones for record(), untimed for the rest.
    std::shared_ptr<EventPool> timed_ = std::make_shared<EventPool>(cudaEventDefault);
    std::shared_ptr<EventPool> untimed_ = std::make_shared<EventPool>(cudaEventDisableTiming);
    std::unique_ptr<UploadStaging> staging_ = std::make_unique<UploadStaging>(); // for upload()
    bool abandoned_ = false; // unwinding: the destructor does not wait
};

// The CUDA stream behind a Stream of the CUDA backend (an Error for any other kind).
cudaStream_t stream_of(Stream& s);

} // namespace shardlab::cuda
