// Threads per rank for OpenMP and OpenBLAS: by default the CPUs this process is bound to when
// mpirun / Slurm bound it (`--bind-to core`, `--map-by slot:PE=N`), else the node's cores divided
// by the ranks mpirun placed on it (OMPI_COMM_WORLD_LOCAL_SIZE), at least 1.
#pragma once

#include <string>
#include <vector>

namespace shardlab::cpu {

int default_threads();
int allowed_cpus();            // CPUs in this process's affinity mask
void set_threads(int threads); // OpenMP (for the calling thread) and OpenBLAS (for all)
// The calling thread's OpenMP team size only: what each stream worker sets for itself, since
// OpenMP's thread count is a per-thread setting and a new thread starts from the default.
void set_thread_team(int threads);
int current_threads();
// A CPU list ("1", "2,3", "4-7") checked against the CPUs this process may run on; throws
// UsageError naming the problem. Empty text: no pinning.
std::vector<int> parse_cpu_list(const std::string& text);
// Runs the calling thread on these CPUs only (a list from parse_cpu_list; empty: no change).
void pin_thread(const std::vector<int>& cpus);

} // namespace shardlab::cpu
