// CollectiveTrace: an optional observer the algorithms report to, step by step. The teaching
// walkthrough (`shardlab collectives show`) implements it; normal runs pass nullptr and pay one
// pointer test per step.
#pragma once

#include "core/dtype.h"

#include <cstddef>

namespace shardlab {

class CollectiveTrace {
  public:
    virtual ~CollectiveTrace() = default;
    // A named sub-algorithm begins ("reduce-scatter", "all-gather", "scatter", ...); steps
    // restart at 0 inside it.
    virtual void phase(const char* name) = 0;
    // One point-to-point transfer in `step`: this rank sends chunk `chunk` (count elements) to
    // peer, or receives it from peer.
    virtual void transfer(int step, bool is_send, int peer, int chunk, std::size_t count) = 0;
    // What a buffer holds at the end of `step`.
    virtual void buffer(int step, const char* label, const void* data, std::size_t count,
                        DType t) = 0;
};

} // namespace shardlab
