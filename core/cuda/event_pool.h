// A stream's CUDA events, reused: creating an event is a driver call with a cost, and a step
// records dozens (every cross-stream wait, every release of memory to the caching allocator), so
// each CudaEvent takes a handle from its stream's pool and gives it back when the last holder drops
// it. Re-recording a handle is safe once nobody holds its old point: CUDA's waits capture the
// event's state when they are enqueued, not later. The pool grows to the most events alive at once,
// then the steps create none. Thread-safe (an event may be dropped on any host thread). Included by
// .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <mutex>
#include <vector>

namespace shardlab::cuda {

class EventPool {
  public:
    // flags: cudaEventDefault (timed) or cudaEventDisableTiming.
    explicit EventPool(unsigned flags) : flags_(flags) {}
    ~EventPool(); // destroys the events given back (all are, by then: holders keep the pool alive)
    EventPool(const EventPool&) = delete;
    EventPool& operator=(const EventPool&) = delete;

    cudaEvent_t take(); // a given-back event, or a new one
    void give(cudaEvent_t e);
    bool timed() const { return (flags_ & cudaEventDisableTiming) == 0; }

  private:
    const unsigned flags_;
    std::mutex mutex_;
    std::vector<cudaEvent_t> free_;
};

} // namespace shardlab::cuda
