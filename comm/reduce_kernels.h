// The host loops behind the CPU backend's element operations (comm/cpu_element_ops.h) and the MPI
// library's average: out = a + b computed in fp32 and rounded once to the buffer's dtype; for the
// last hop of an average, (a + b) / divisor. Because each hop rounds exactly once, the ring's
// result depends only on the order of ranks, never on timing: every rank gets the same bits.
#pragma once

#include "core/dtype.h"

#include <cstddef>

namespace shardlab {

// out may alias a or b. divisor = 1 means a plain sum.
void reduce_add(void* out, const void* a, const void* b, std::size_t n, DType t, float divisor);

// out = in / divisor in fp32, rounded once (the MPI library's average: its sum, then this).
void scale_down(void* out, const void* in, std::size_t n, DType t, float divisor);

} // namespace shardlab
