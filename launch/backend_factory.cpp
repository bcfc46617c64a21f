// make_backend (declared in launch/device_options.h): the Backend that --device names, made on
// every rank at once. Kept apart from the flags (device_options.cpp) so that code registering
// them, such as the config-file fuzzer, links without every backend behind this call.
#include "launch/device_options.h"

#include "launch/cli_util.h"
#include "model/kernels/cpu/threads.h"

#include <fmt/format.h>

namespace shardlab {

namespace {
// More threads than the CPUs this rank is bound to would time-share cores, slower than fewer
// threads: say so once (rank 0's view) with the fix.
void warn_if_oversubscribed(int threads, MPI_Comm world) {
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    const int cpus = cpu::allowed_cpus();
    if (rank != 0 || threads <= cpus) return;
    fmt::print(stderr,
               "shardlab: warning: rank 0 runs {} threads on {} CPU{} (its binding); they will "
               "share cores. Give each rank its cores: mpirun --map-by slot:PE={} --bind-to core "
               "(Slurm: --cpus-per-task={}), or pass --threads {}\n",
               threads, cpus, cpus == 1 ? "" : "s", threads, threads, cpus);
}
} // namespace

std::unique_ptr<Backend> make_backend(const DeviceOptions& o, MPI_Comm world) {
    check_device_options(o);
    std::unique_ptr<Backend> backend;
    collectively(
        [&] {
            if (o.device == "cuda")
                backend = make_cuda_backend(world, {o.share_gpu, o.transport});
            else {
                const int threads = o.threads > 0 ? o.threads : cpu::default_threads();
                warn_if_oversubscribed(threads, world);
                backend = make_cpu_backend(threads, o.comm_cpus, o.gemm);
            }
        },
        world);
    return backend;
}

} // namespace shardlab
