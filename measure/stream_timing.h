// The time of work enqueued on a stream, as calibrate's measurements take it: every rank at once
// (a barrier first), the median of `reps` runs each waited for, the slowest rank's.
#pragma once

#include "core/stream.h"
#include "core/timer.h"
#include "measure/slowest_rank.h"

#include <mpi.h>

namespace shardlab {

template <typename Enqueue>
double stream_seconds(Stream& s, int reps, MPI_Comm comm, Enqueue&& enqueue) {
    s.synchronize();
    MPI_Barrier(comm);
    return slowest_rank(median_seconds(reps,
                                       [&] {
                                           enqueue();
                                           s.synchronize();
                                       }),
                        comm);
}

} // namespace shardlab
