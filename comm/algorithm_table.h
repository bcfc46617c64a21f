// The algorithm table (NCCL's style): one row per (operation, algorithm) that exists, naming the
// function that runs it. The Communicator dispatches every collective through it, so adding an
// algorithm is one file and one row here. A descriptor {op, algorithm} plus the communicator it
// is run on — the process group — says everything about a call but its buffers.
#pragma once

#include "comm/algo.h"
#include "comm/collective_context.h"
#include "comm/collective_op.h"

#include <string>

namespace shardlab {

using AlgorithmFn = void (*)(CollectiveContext&, const CollectiveCall&);

struct AlgorithmRow {
    CollectiveOp op;
    Algo algo;
    AlgorithmFn run;
};

// The row for (op, algo); throws UsageError naming the algorithms op has when there is none.
const AlgorithmRow& find_algorithm(CollectiveOp op, Algo algo);
bool has_algorithm(CollectiveOp op, Algo algo);
// The key CommStats files a call under: "allreduce" for the ring, "allreduce/hd" otherwise.
std::string stats_key(CollectiveOp op, Algo algo);
// Whether shardlab sees the bytes (its own algorithms) or not (the library's).
inline bool bytes_measured(Algo a) {
    return a != Algo::native;
}

} // namespace shardlab
