// One string per rank collected on rank 0: for reports and walkthroughs.
#pragma once

#include <mpi.h>
#include <string>
#include <vector>

namespace shardlab {

// One string per rank, collected on rank 0 in rank order (empty elsewhere). Plain MPI: for
// reports and walkthroughs, outside the statistics of shardlab's own collectives.
std::vector<std::string> gather_to_root(const std::string& mine, MPI_Comm comm);

} // namespace shardlab
