// The slowest rank's time: every measurement here runs on all ranks at once (as training does,
// sharing the node's cores, memory and links) and reports the largest time over the ranks.
#pragma once

#include <mpi.h>

namespace shardlab {

// Collective over comm.
inline double slowest_rank(double seconds, MPI_Comm comm) {
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
    return seconds;
}

} // namespace shardlab
