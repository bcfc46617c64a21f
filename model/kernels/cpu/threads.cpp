// Thread-count plumbing for OpenMP and OpenBLAS.
#include "model/kernels/cpu/threads.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace shardlab::cpu {

int default_threads() {
    int local = 1;
    for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"})
        if (const char* v = std::getenv(var)) {
            local = std::max(1, std::atoi(v));
            break;
        }
    return std::max(1, int(std::thread::hardware_concurrency()) / local);
}

void set_threads(int threads) {
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
}

void set_thread_team(int threads) {
    omp_set_num_threads(threads);
}

int current_threads() {
    return omp_get_max_threads();
}

} // namespace shardlab::cpu
