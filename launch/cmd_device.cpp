// `shardlab device`: what this machine computes with. For the CPU: its model, vector ISA and the
// GEMM library, kernel and ISA each dtype uses (as `--gemm` chooses them); for CUDA: what the
// runtime sees and, with a GPU, the cuBLAS files the backend would open. Says plainly when there is
// no GPU (or no CUDA in this build), which is the normal state of a laptop or CI machine.
#include "core/device.h"
#include "launch/commands.h"
#include "model/kernels/cpu/cpu_gemm.h"
#include "model/kernels/cpu/cpu_model.h"
#include "model/kernels/cpu/threads.h"

#include <fmt/format.h>

#include <memory>
#include <string>

namespace shardlab {

namespace {
void print_cpu(const std::string& gemm_request) {
    fmt::print("CPU: {}, {} threads by default, vector ISA {}\n", cpu::cpu_model_name(),
               cpu::default_threads(), cpu::cpu_isa());
    cpu::CpuGemm gemm(gemm_request);
    fmt::print("GEMM (--gemm {}):\n",
               gemm_request.empty() ? cpu::default_gemm_request() : gemm_request);
    const std::string lines = gemm.describe();
    for (std::size_t at = 0, end; (end = lines.find('\n', at)) != std::string::npos; at = end + 1)
        fmt::print("  {}\n", lines.substr(at, end - at));
}

void print_cuda() {
    GpuQuery q = query_gpus(/*measure_free=*/true);
    if (!q.cuda_built) {
        fmt::print("CUDA: not built (no nvcc or no NCCL at configure time, or "
                   "-DSHARDLAB_CUDA=OFF); running on CPU\n");
        return;
    }
    if (q.gpus.empty()) {
        fmt::print("CUDA: built, but no GPU is present ({}); running on CPU\n", q.status);
        return;
    }
    for (const GpuInfo& g : q.gpus)
        fmt::print("cuda:{}  {}  sm_{}{}  {} SMs  {:.2f} GiB total, {:.2f} GiB free\n", g.index,
                   g.name, g.cc_major, g.cc_minor, g.multiprocessors,
                   double(g.total_bytes) / double(1ull << 30),
                   double(g.free_bytes) / double(1ull << 30));
    // Opened when the backend is made, not at start: whether they load is known only by trying.
    fmt::print("cuBLAS: {}\n", cuda_libraries());
}
} // namespace

CommandRunner add_device_command(CLI::App& cmd) {
    auto gemm = std::make_shared<std::string>();
    cmd.add_option("--gemm", *gemm, "auto | openblas | onednn: show that choice");
    return [gemm] {
        print_cpu(*gemm);
        print_cuda();
        return 0;
    };
}

} // namespace shardlab
