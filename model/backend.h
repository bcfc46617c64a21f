// Backend: what a rank computes and communicates with — a device context (device, three streams,
// tracked stream-ordered memory), the Ops that compute on it, the element operations collectives
// reduce with, and the transport its communicators move bytes over. The model, the ZeRO engine,
// offload and the collectives are the same code on every backend; launch/ picks one, once.
#pragma once

#include "comm/communicator.h"
#include "comm/element_ops.h"
#include "core/device_context.h"
#include "model/gemm_workspace.h"
#include "model/ops.h"

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace shardlab {

class Backend {
  public:
    virtual ~Backend() = default;
    DeviceContext& context() { return *context_; }
    Ops& ops() { return *ops_; }
    ElementOps& element_ops() { return *elements_; }
    // Collectives among the ranks of `comm`, run on this backend's comm stream. The communicator
    // refers to this backend's streams and element operations: destroy it first.
    virtual std::unique_ptr<Communicator> communicator(MPI_Comm comm) = 0;
    // Bytes in use on the device as its driver counts them (cudaMemGetInfo: everything on the
    // GPU, including what the tracker cannot see — the CUDA context, cuBLAS's and NCCL's
    // buffers, and other processes on a shared GPU); none on the CPU.
    virtual std::optional<std::size_t> device_bytes_in_use() { return std::nullopt; }
    // Whether collectives copy device buffers through host memory (the MPI transport on a GPU):
    // the plan then counts that staging as host comm buffers.
    virtual bool stages_comm_through_host() const { return false; }
    // The workspace this backend's GEMMs of dtype t take, as the plan models it.
    virtual GemmWorkspace gemm_workspace(DType) const { return GemmWorkspace::unmodelled; }
    // What this rank computes on, in words (e.g. "cuda:0 NVIDIA H100, transport nccl").
    virtual std::string describe() const = 0;

  protected:
    // Declared first, destroyed last: the ops allocate from its tracker.
    std::unique_ptr<DeviceContext> context_;
    std::unique_ptr<ElementOps> elements_;
    std::unique_ptr<Ops> ops_;
};

// The CPU backend: worker-thread streams, host memory, the CPU kernels, MPI. `threads` OpenMP
// threads per stream (and on the calling thread). comm_cpus (a CPU list, e.g. "1"): where the
// comm and copy streams' threads run — on a CPU communication is memory copying, so it overlaps
// compute for real only on a core compute does not use; empty: wherever the system puts them.
std::unique_ptr<Backend> make_cpu_backend(int threads, const std::string& comm_cpus = "",
                                          const std::string& gemm = "");

// How the CUDA backend's ranks find their GPU and talk.
struct CudaOptions {
    // Let more ranks than GPUs run on a node, several to a GPU (tests; teaching on one GPU).
    bool share_gpu = false;
    // "nccl", "mpi" (device buffers staged through pinned host memory) or "auto": NCCL, unless
    // ranks share a GPU, which NCCL does not allow.
    std::string transport = "auto";
};

// The CUDA backend (model/backend_cuda.cu): the GPU of this rank's place on its node (an
// MPI_COMM_TYPE_SHARED split of `world`; CUDA_VISIBLE_DEVICES is respected), CUDA streams, the
// stream-ordered allocator on device memory, pinned host memory, cuBLAS, NCCL. Collective over
// `world`. In a build without CUDA, a UsageError naming the build to make.
std::unique_ptr<Backend> make_cuda_backend(MPI_Comm world, const CudaOptions& options);

} // namespace shardlab
