// The ranks start the timed calls together (a barrier after the warm-up), so the slowest rank's
// time is the collective's.
#include "measure/collective_timing.h"

#include "measure/slowest_rank.h"

#include <mpi.h>

#include <algorithm>

namespace shardlab {

double collective_seconds(Communicator& comm, const CollectiveCall& call, Algo algo, int warmup,
                          int iters) {
    for (int i = 0; i < warmup; ++i) comm.run(call, algo);
    comm.synchronize();
    MPI_Barrier(comm.mpi_comm());
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) comm.run(call, algo);
    comm.synchronize();
    return slowest_rank((MPI_Wtime() - t0) / std::max(1, iters), comm.mpi_comm());
}

} // namespace shardlab
