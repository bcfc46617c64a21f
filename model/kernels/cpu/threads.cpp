// Thread-count plumbing for OpenMP and OpenBLAS.
#include "model/kernels/cpu/threads.h"

#include "core/error.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <pthread.h>
#include <sched.h>

namespace shardlab::cpu {

namespace {
// libgomp is not built with ThreadSanitizer: TSan cannot see its barriers and would report every
// parallel loop. A TSan build therefore runs each stream's kernels on one thread — the races it
// is there to find are between streams.
#if defined(__SANITIZE_THREAD__)
int team(int threads) {
    (void)threads;
    return 1;
}
#else
int team(int threads) {
    return threads;
}
#endif
} // namespace

int allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return int(std::thread::hardware_concurrency());
    return std::max(1, CPU_COUNT(&set));
}

int default_threads() {
    // Bound by mpirun or Slurm to fewer CPUs than the machine has: exactly those.
    const int allowed = allowed_cpus();
    if (allowed < int(std::thread::hardware_concurrency())) return allowed;
    int local = 1;
    for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"})
        if (const char* v = std::getenv(var)) {
            local = std::max(1, std::atoi(v));
            break;
        }
    return std::max(1, int(std::thread::hardware_concurrency()) / local);
}

void set_threads(int threads) {
    omp_set_num_threads(team(threads));
    openblas_set_num_threads(team(threads));
}

void set_thread_team(int threads) {
    omp_set_num_threads(team(threads));
}

int current_threads() {
    return omp_get_max_threads();
}

namespace {
bool pin_to(const std::vector<int>& cpus) {
    if (cpus.empty()) return true;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) {
        if (c >= CPU_SETSIZE) return false;
        CPU_SET(c, &set);
    }
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}
} // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
    std::vector<int> cpus;
    if (text.empty()) return cpus;
    const std::string bad = "bad CPU list '" + text + "'; write CPU numbers like 1 or 2,3 or 4-7";
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        int lo = 0, hi = 0;
        char dash = 0;
        std::istringstream r(item);
        if (!(r >> lo)) throw UsageError(bad);
        hi = lo;
        if (r >> dash && !(dash == '-' && r >> hi)) throw UsageError(bad);
        if (lo < 0 || hi < lo) throw UsageError(bad);
        for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    }
    // Try it on a thread of its own: the system says which CPUs exist and are allowed.
    bool pinned = false;
    std::thread probe([&] { pinned = pin_to(cpus); });
    probe.join();
    if (!pinned)
        throw UsageError("cannot run on CPUs " + text +
                         " (not present, or outside this job's CPU set); see nproc");
    return cpus;
}

void pin_thread(const std::vector<int>& cpus) {
    pin_to(cpus); // checked by parse_cpu_list
}

} // namespace shardlab::cpu
