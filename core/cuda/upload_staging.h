// Small host-to-device uploads (each forward's token ids) through pinned memory of the stream's
// own. From pageable memory CUDA may synchronise the host with the stream to stage a copy, which
// would stop the host running ahead of the device every forward. Here the caller's bytes are copied
// into a pinned slot at once (so the caller may reuse them, as Stream::upload promises), the device
// copy is asynchronous, and a slot is rewritten only after the event recorded behind its copy has
// passed. Slots are pinned host memory outside the tracker, like the driver's own staging buffers
// they replace: kSlots x kMaxBytes (2 MiB) on a stream that uploads, allocated at its first uploads
// and never again (the steps make no allocation). Included by .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace shardlab::cuda {

class UploadStaging {
  public:
    static constexpr std::size_t kMaxBytes = std::size_t(256) << 10; // larger: pageable, rare
    static constexpr std::size_t kSlots = 8; // uploads in flight before the host waits for one

    UploadStaging() = default;
    ~UploadStaging(); // the owner has drained its stream
    UploadStaging(const UploadStaging&) = delete;
    UploadStaging& operator=(const UploadStaging&) = delete;

    // Enqueues the copy of `bytes` from `host_src` to `dst` on `stream` through a slot; false when
    // `bytes` is over kMaxBytes (the caller uploads it another way). A slot still in use is waited
    // for with `wait` (the owner's watched wait: a stalled stream is reported, not waited on
    // forever).
    bool upload(void* dst, const void* host_src, std::size_t bytes, cudaStream_t stream,
                const std::function<void(cudaEvent_t)>& wait);

  private:
    struct Slot {
        void* host = nullptr;         // pinned, kMaxBytes
        cudaEvent_t copied = nullptr; // recorded behind the slot's last copy
    };
    std::vector<Slot> slots_;
    std::size_t next_ = 0;
};

} // namespace shardlab::cuda
