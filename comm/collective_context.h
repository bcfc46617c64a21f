// What every collective algorithm needs besides its arguments: the transport to move bytes, a
// scratch buffer (tracked as comm_buffers, grown on demand, reused across calls) and the
// optional step-by-step trace.
#pragma once

#include "comm/collective_trace.h"
#include "comm/transport.h"
#include "core/memory_tracker.h"
#include "core/scratch_buffer.h"

#include <cstddef>

namespace shardlab {

struct CollectiveContext {
    Transport& transport;
    MemoryTracker& tracker; // for comm_buffers an algorithm needs beside the shared scratch
    ScratchBuffer& scratch;
    CollectiveTrace* trace = nullptr;

    int rank() const { return transport.rank(); }
    int size() const { return transport.size(); }
};

} // namespace shardlab
