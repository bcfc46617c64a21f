// What every collective algorithm needs besides its arguments: the transport to move bytes, a
// scratch buffer (tracked as comm_buffers, grown on demand, reused across calls) and the
// optional step-by-step trace.
#pragma once

#include "comm/collective_trace.h"
#include "comm/transport.h"
#include "core/memory_tracker.h"

#include <cstddef>

namespace shardlab {

class ScratchBuffer {
  public:
    explicit ScratchBuffer(MemoryTracker& tracker) : tracker_(tracker) {}
    // At least `bytes` of comm_buffers memory; contents are not preserved across growth.
    void* get(std::size_t bytes) {
        if (bytes > buffer_.bytes()) {
            buffer_.release();
            buffer_ = tracker_.allocate(bytes, Category::comm_buffers);
        }
        return buffer_.data();
    }
    std::size_t bytes() const { return buffer_.bytes(); }

  private:
    MemoryTracker& tracker_;
    Allocation buffer_;
};

struct CollectiveContext {
    Transport& transport;
    MemoryTracker& tracker; // for comm_buffers an algorithm needs beside the shared scratch
    ScratchBuffer& scratch;
    CollectiveTrace* trace = nullptr;

    int rank() const { return transport.rank(); }
    int size() const { return transport.size(); }
};

} // namespace shardlab
