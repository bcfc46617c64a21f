// The time of one collective call, nccl-tests' way: warm-up calls, then `iters` calls back to back
// on the comm stream, waited for once; the slowest rank's mean per call. `collectives bench`
// prints it per size; `shardlab calibrate` fits alpha and beta to it.
#pragma once

#include "comm/communicator.h"

namespace shardlab {

// Collective over comm's ranks. The call's buffers must be device memory of the right sizes
// (comm/collective_op.h call_sizes).
double collective_seconds(Communicator& comm, const CollectiveCall& call, Algo algo, int warmup,
                          int iters);

} // namespace shardlab
