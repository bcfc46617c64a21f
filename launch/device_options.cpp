// --device and its checks; the backend factory is launch/backend_factory.cpp.
#include "launch/device_options.h"

#include "core/error.h"
#include "model/kernels/cpu/cpu_gemm.h"
#include "model/kernels/cpu/threads.h"

namespace shardlab {

void add_device_options(CLI::App& cmd, DeviceOptions& o, bool comm_cpus) {
    cmd.add_option("--device", o.device,
                   "cpu | cuda (one GPU per rank, by its place on the node; a GPU build, or the "
                   "CPU emulator of one: -DSHARDLAB_CUDA=EMU)");
    cmd.add_option("--threads", o.threads,
                   "CPU: threads per rank (default: the CPUs the rank is bound to, else cores / "
                   "ranks on this node)");
    cmd.add_option("--gemm", o.gemm,
                   "CPU: auto | openblas | onednn — the GEMM library (auto: by the CPU's vector "
                   "ISA, see `shardlab device`; default $SHARDLAB_GEMM or auto)");
    if (comm_cpus)
        cmd.add_option("--comm-cpus", o.comm_cpus,
                       "CPU: run the comm and copy streams on these CPUs (e.g. 1 or 6,7): on a "
                       "CPU, communication overlaps compute only on cores compute leaves free");
    cmd.add_flag("--share-gpu", o.share_gpu,
                 "CUDA: let several ranks use one GPU (more ranks than GPUs on a node)");
    cmd.add_option("--transport", o.transport,
                   "CUDA: auto | nccl | mpi (mpi stages device buffers through pinned host "
                   "memory; auto is nccl unless ranks share a GPU)");
}

void check_device_options(const DeviceOptions& o) {
    if (o.device != "cpu" && o.device != "cuda")
        throw UsageError("--device " + o.device + " is not a device; use cpu or cuda");
    if (o.transport != "auto" && o.transport != "nccl" && o.transport != "mpi")
        throw UsageError("--transport " + o.transport +
                         " is not a transport; use auto, nccl or mpi");
    if (o.threads < 0) throw UsageError("--threads must be at least 1 (or 0: the default)");
    cpu::parse_cpu_list(o.comm_cpus); // a bad --comm-cpus stops every rank here
    const std::string gemm = o.gemm.empty() ? cpu::default_gemm_request() : o.gemm;
    if (gemm != "auto" && gemm != "openblas" && gemm != "onednn")
        throw UsageError("--gemm " + gemm +
                         " (or SHARDLAB_GEMM) is not a GEMM library; use auto, "
                         "openblas or onednn");
    if (o.device == "cuda" && !o.gemm.empty())
        throw UsageError("--gemm applies to --device cpu only (CUDA uses cuBLAS)");
    if (o.device == "cpu" && (o.share_gpu || o.transport != "auto"))
        throw UsageError("--share-gpu and --transport apply to --device cuda only");
}

} // namespace shardlab
