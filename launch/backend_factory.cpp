// make_backend (declared in launch/device_options.h): the Backend that --device names, made on
// every rank at once. Kept apart from the flags (device_options.cpp) so that code registering
// them, such as the config-file fuzzer, links without every backend behind this call.
#include "launch/device_options.h"

#include "launch/cli_util.h"
#include "model/kernels/cpu/threads.h"

namespace shardlab {

std::unique_ptr<Backend> make_backend(const DeviceOptions& o, MPI_Comm world) {
    check_device_options(o);
    std::unique_ptr<Backend> backend;
    collectively(
        [&] {
            if (o.device == "cuda")
                backend = make_cuda_backend(world, {o.share_gpu, o.transport});
            else
                backend = make_cpu_backend(o.threads > 0 ? o.threads : cpu::default_threads(),
                                           o.comm_cpus, o.gemm);
        },
        world);
    return backend;
}

} // namespace shardlab
