// The collective operations shardlab knows, the reduction they apply, and one call described as
// data — without any transport: the plan and the communication model use these names too.
#pragma once

#include "core/dtype.h"

#include <cstddef>
#include <string>

namespace shardlab {

enum class CollectiveOp {
    allgather,
    reduce_scatter,
    allreduce,
    broadcast,
    reduce,
    gather,
    scatter
};
CollectiveOp parse_op(const std::string& name); // throws UsageError listing the valid names
const char* op_name(CollectiveOp op);
bool op_has_root(CollectiveOp op);
bool op_reduces(CollectiveOp op);

// Sum, or average (the sum divided by N in fp32 before the single rounding).
enum class ReduceOp { sum, avg };
const char* reduce_op_name(ReduceOp op);

// One collective call, for code that picks the operation at run time (bench, walkthrough,
// native collectives). Buffer sizes follow comm/algorithms.h: e.g. allgather's send holds
// chunk(rank) elements.
struct CollectiveCall {
    CollectiveOp op = CollectiveOp::allreduce;
    const void* send = nullptr;
    void* recv = nullptr;
    std::size_t count = 0; // S / dtype size: the whole buffer
    DType dtype = DType::f32;
    ReduceOp reduce = ReduceOp::sum;
    int root = 0;
};

// How many elements this rank's send and recv buffers hold for one call (0: not used).
struct CallSizes {
    std::size_t send = 0, recv = 0;
};
CallSizes call_sizes(CollectiveOp op, std::size_t count, int n, int rank, int root);

} // namespace shardlab
