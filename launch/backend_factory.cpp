// make_backend (declared in launch/device_options.h): the Backend that --device names, made on
// every rank at once. Kept apart from the flags (device_options.cpp) so that code registering
// them, such as the config-file fuzzer, links without every backend behind this call.
#include "launch/device_options.h"

#include "comm/agreement.h"
#include "launch/cli_util.h"
#include "model/kernels/cpu/threads.h"

#include <fmt/format.h>

namespace shardlab {

namespace {
// More threads than the CPUs this rank is bound to would time-share cores: each OpenMP barrier then
// waits for descheduled threads, and --threads 1000 on 2 CPUs made one step take 124 s (the whole
// run had taken 2 s). So a rank runs at most one thread per CPU of its binding; rank 0 says so
// once, with the fix.
int threads_within_binding(int threads, MPI_Comm world) {
    const int cpus = cpu::allowed_cpus();
    if (threads <= cpus) return threads;
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    if (rank == 0)
        fmt::print(stderr,
                   "shardlab: warning: --threads {} is more than the {} CPU{} rank 0 may run on "
                   "(its binding); each rank runs at most one thread per CPU of its binding, so "
                   "{} here. To give each rank more cores: mpirun --map-by slot:PE={} --bind-to "
                   "core (Slurm: --cpus-per-task={})\n",
                   threads, cpus, cpus == 1 ? "" : "s", cpus, threads, threads);
    return cpus;
}

std::unique_ptr<Backend> build_backend(const DeviceOptions& o, MPI_Comm world) {
    if (o.device == "cuda") return make_cuda_backend(world, {o.share_gpu, o.transport});
    const int threads =
        threads_within_binding(o.threads > 0 ? o.threads : cpu::default_threads(), world);
    return make_cpu_backend(threads, o.comm_cpus, o.gemm);
}

// Every rank builds its backend; a failure on any is reported on all (through `agree`).
template <class Agreement>
std::unique_ptr<Backend> make_agreed(const DeviceOptions& o, MPI_Comm world, Agreement& agree) {
    check_device_options(o);
    std::unique_ptr<Backend> backend;
    collectively([&] { backend = build_backend(o, world); }, agree);
    return backend;
}
} // namespace

std::unique_ptr<Backend> make_backend(const DeviceOptions& o, MPI_Comm world) {
    return make_agreed(o, world, world);
}

std::unique_ptr<Backend> make_backend(const DeviceOptions& o, MPI_Comm world, WatchedComm& agree) {
    return make_agreed(o, world, agree);
}

} // namespace shardlab
