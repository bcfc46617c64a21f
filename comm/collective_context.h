// What every collective algorithm needs besides its arguments: the transport that moves bytes,
// the element operations that reduce them, the stream everything runs in, the tracker its scratch
// is counted by (comm_buffers, allocated per call and released in stream order), and the optional
// step-by-step trace. Algorithms run on the host and only enqueue; they never wait.
#pragma once

#include "comm/collective_trace.h"
#include "comm/element_ops.h"
#include "comm/node_layout.h"
#include "comm/transport.h"
#include "core/memory_tracker.h"
#include "core/stream.h"

#include <cstddef>
#include <functional>

namespace shardlab {

struct CollectiveContext {
    Transport& transport;
    ElementOps& elements;
    Stream& stream;
    MemoryTracker& tracker;
    CollectiveTrace* trace = nullptr;
    const NodeLayout* layout = nullptr; // the hierarchical algorithms need it

    int rank() const { return transport.rank(); }
    int size() const { return transport.size(); }
    // Scratch for one call: released (in stream order) when the returned allocation dies.
    Allocation scratch(std::size_t bytes) {
        return tracker.allocate(bytes, Category::comm_buffers, stream);
    }
    // Reports to the trace in stream order, when the data it shows is there.
    void report(std::function<void(CollectiveTrace&)> fn) {
        if (trace) stream.enqueue([t = trace, fn = std::move(fn)] { fn(*t); });
    }
};

} // namespace shardlab
