// ElementOps: the arithmetic a collective does on the data it moves, handed in by the backend
// (gloo's style: the algorithm moves bytes, the reduction is given to it). On the CPU a host
// loop (comm/cpu_element_ops.h), on a GPU a kernel; either runs in the given stream's order.
#pragma once

#include "core/dtype.h"
#include "core/stream.h"

#include <cstddef>

namespace shardlab {

class ElementOps {
  public:
    virtual ~ElementOps() = default;
    // out = (a + b) / divisor, computed in fp32 and rounded once to t; out may alias a or b;
    // divisor 1 is a plain sum.
    virtual void reduce_add(Stream& s, void* out, const void* a, const void* b, std::size_t n,
                            DType t, float divisor) = 0;
};

} // namespace shardlab
