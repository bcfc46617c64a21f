// Threads per rank for OpenMP and OpenBLAS: by default the node's cores divided by the ranks
// mpirun placed on it (OMPI_COMM_WORLD_LOCAL_SIZE), at least 1.
#pragma once

namespace shardlab::cpu {

int default_threads();
void set_threads(int threads); // OpenMP and OpenBLAS alike
int current_threads();

} // namespace shardlab::cpu
