// Implementation of core/cuda/event_pool.h.
#include "core/cuda/event_pool.h"

#include "core/cuda/cuda_check.h"

namespace shardlab::cuda {

EventPool::~EventPool() {
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
}

cudaEvent_t EventPool::take() {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (!free_.empty()) {
            cudaEvent_t e = free_.back();
            free_.pop_back();
            return e;
        }
    }
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, flags_), "cudaEventCreate");
    return e;
}

void EventPool::give(cudaEvent_t e) {
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(e);
}

} // namespace shardlab::cuda
