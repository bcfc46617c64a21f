// The element-wise reduction every reducing collective uses: out = a + b computed in fp32 and
// rounded once to the buffer's dtype; for the last hop of an average, (a + b) / divisor.
// Because each hop rounds exactly once, the ring's result depends only on the order of ranks,
// never on timing: every rank gets the same bits, run after run.
#pragma once

#include "core/dtype.h"

#include <cstddef>

namespace shardlab {

enum class ReduceOp { sum, avg };
const char* reduce_op_name(ReduceOp op);

// out may alias a or b. divisor = 1 means a plain sum.
void reduce_add(void* out, const void* a, const void* b, std::size_t n, DType t, float divisor);

// out = in / divisor in fp32, rounded once (used for average where no addition is left, N = 1).
void scale_down(void* out, const void* in, std::size_t n, DType t, float divisor);

} // namespace shardlab
