// Threads per rank for OpenMP and OpenBLAS: by default the node's cores divided by the ranks
// mpirun placed on it (OMPI_COMM_WORLD_LOCAL_SIZE), at least 1.
#pragma once

namespace shardlab::cpu {

int default_threads();
void set_threads(int threads); // OpenMP (for the calling thread) and OpenBLAS (for all)
// The calling thread's OpenMP team size only: what each stream worker sets for itself, since
// OpenMP's thread count is a per-thread setting and a new thread starts from the default.
void set_thread_team(int threads);
int current_threads();

} // namespace shardlab::cpu
