// `shardlab device`: what the CUDA runtime sees. Says plainly when there is no GPU (or no CUDA
// in this build), which is the normal state of a laptop or CI machine.
#include "core/device.h"
#include "launch/commands.h"

#include <fmt/format.h>

namespace shardlab {

CommandRunner add_device_command(CLI::App&) {
    return [] {
        GpuQuery q = query_gpus();
        if (!q.cuda_built) {
            fmt::print("CUDA: not built (nvcc was not found at configure time); running on CPU\n");
            return 0;
        }
        if (q.gpus.empty()) {
            fmt::print("CUDA: built, but no GPU is present ({}); running on CPU\n", q.status);
            return 0;
        }
        for (const GpuInfo& g : q.gpus)
            fmt::print("cuda:{}  {}  sm_{}{}  {} SMs  {:.2f} GiB total, {:.2f} GiB free\n", g.index,
                       g.name, g.cc_major, g.cc_minor, g.multiprocessors,
                       double(g.total_bytes) / double(1ull << 30),
                       double(g.free_bytes) / double(1ull << 30));
        return 0;
    };
}

} // namespace shardlab
