// ScratchBuffer: a tracked, reusable temporary buffer that grows on demand and never shrinks —
// for collectives (comm_buffers) and kernels (workspace). Contents do not survive growth.
#pragma once

#include "core/memory_tracker.h"

#include <cstddef>

namespace shardlab {

class ScratchBuffer {
  public:
    ScratchBuffer(MemoryTracker& tracker, Category category)
        : tracker_(tracker), category_(category) {}
    void* get(std::size_t bytes) {
        if (bytes > buffer_.bytes()) {
            buffer_.release();
            buffer_ = tracker_.allocate(bytes, category_);
        }
        return buffer_.data();
    }
    template <typename T>
    T* get_as(std::size_t count) {
        return static_cast<T*>(get(count * sizeof(T)));
    }
    std::size_t bytes() const { return buffer_.bytes(); }
    void release() { buffer_.release(); }

  private:
    MemoryTracker& tracker_;
    Category category_;
    Allocation buffer_;
};

} // namespace shardlab
