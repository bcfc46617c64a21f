// Implementation of core/cuda/upload_staging.h.
#include "core/cuda/upload_staging.h"

#include "core/cuda/cuda_check.h"

#include <cstring>

namespace shardlab::cuda {

UploadStaging::~UploadStaging() {
    for (Slot& s : slots_) {
        if (s.copied) cudaEventDestroy(s.copied);
        if (s.host) cudaFreeHost(s.host);
    }
}

bool UploadStaging::upload(void* dst, const void* host_src, std::size_t bytes, cudaStream_t stream,
                           const std::function<void(cudaEvent_t)>& wait) {
    if (bytes > kMaxBytes) return false;
    if (slots_.size() < kSlots) slots_.emplace_back();
    Slot& s = slots_[next_];
    next_ = (next_ + 1) % kSlots;
    if (s.copied) // the slot's previous copy must have read it (rarely waits: kSlots uploads ago)
        wait(s.copied);
    else
        check_cuda(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming), "cudaEventCreate");
    if (!s.host)
        check_cuda(cudaHostAlloc(&s.host, kMaxBytes, cudaHostAllocDefault), "cudaHostAlloc");
    std::memcpy(s.host, host_src, bytes);
    check_cuda(cudaMemcpyAsync(dst, s.host, bytes, cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync");
    check_cuda(cudaEventRecord(s.copied, stream), "cudaEventRecord");
    return true;
}

} // namespace shardlab::cuda
