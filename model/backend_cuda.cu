// The CUDA backend's parts, and which GPU a rank takes.
#include "comm/cuda_element_ops.h"
#include "comm/mpi_transport.h"
#include "comm/nccl_transport.h"
#include "comm/staged_transport.h"
#include "core/cpu_stream.h"
#include "core/cuda/cuda_check.h"
#include "model/backend.h"
#include "model/ops_cuda.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace shardlab {

namespace {
// This rank's place among the ranks of its node; own_gpu: the launcher gave each rank of the node a
// GPU of its own (Slurm's --gpus-per-task=1 or --gpu-bind=single:1): every rank sees one GPU, and
// no two see the same one (their PCI bus ids differ) — then each rank's GPU 0 is its own.
struct NodePlace {
    int local_rank = 0, local_size = 1;
    bool own_gpu = false;
};

// Whether the node's ranks each see exactly one GPU, all different. Collective over `node`.
bool one_different_gpu_each(MPI_Comm node, int size) {
    constexpr int kLen = 32;
    char mine[kLen] = {};
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count != 1 ||
        cudaDeviceGetPCIBusId(mine, kLen, 0) != cudaSuccess)
        mine[0] = '\0'; // not one visible GPU: no claim to one of its own
    cudaGetLastError(); // a failed query is reported later, by visible_gpus()
    std::vector<char> all(std::size_t(size) * kLen);
    MPI_Allgather(mine, kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, node);
    std::set<std::string> seen;
    for (int r = 0; r < size; ++r) {
        const std::string id(&all[std::size_t(r) * kLen]);
        if (id.empty() || !seen.insert(id).second) return false;
    }
    return true;
}

NodePlace node_place(MPI_Comm world) {
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    NodePlace p;
    MPI_Comm_rank(node, &p.local_rank);
    MPI_Comm_size(node, &p.local_size);
    p.own_gpu = p.local_size > 1 && one_different_gpu_each(node, p.local_size);
    MPI_Comm_free(&node);
    return p;
}

std::string visible_devices() {
    const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
    return v ? std::string("CUDA_VISIBLE_DEVICES=") + v : "CUDA_VISIBLE_DEVICES unset";
}

// How many GPUs this process sees, or a UsageError that names the fix.
int visible_gpus() {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        throw UsageError("no CUDA GPU is usable (" +
                         (e != cudaSuccess ? cuda::describe(e) : "0 devices") + ", " +
                         visible_devices() +
                         "); run with --device cpu, or where `shardlab device` lists a GPU");
    return count;
}

// The GPU for this rank: its place on the node, several ranks to a GPU only when asked.
int choose_gpu(const CudaOptions& o, const NodePlace& p, int count) {
    if (p.own_gpu && count == 1) return 0;
    if (p.local_size > count && !o.share_gpu)
        throw UsageError(std::to_string(p.local_size) + " ranks on this node but " +
                         std::to_string(count) + " GPU" + (count == 1 ? "" : "s") + " visible (" +
                         visible_devices() + "); start at most " + std::to_string(count) +
                         " ranks per node, let every rank see the node's GPUs (Slurm: srun "
                         "--gpu-bind=none), or pass --share-gpu to put several ranks on a GPU");
    return p.local_rank % count;
}

bool use_nccl(const CudaOptions& o, bool shared) {
    if (o.transport == "mpi") return false;
    if (o.transport == "nccl" && shared)
        throw UsageError("--transport nccl with ranks sharing a GPU: NCCL allows one rank per "
                         "GPU; use --transport mpi (or auto)");
    return !shared;
}

class CudaBackend : public Backend {
  public:
    CudaBackend(MPI_Comm world, const CudaOptions& o) {
        const NodePlace place = node_place(world);
        const int count = visible_gpus();
        const int gpu = choose_gpu(o, place, count);
        nccl_ = use_nccl(o, place.local_size > count && !(place.own_gpu && count == 1));
        cuda::check_cuda(cudaSetDevice(gpu), "cudaSetDevice");
        cudaDeviceProp prop{};
        cuda::check_cuda(cudaGetDeviceProperties(&prop, gpu), "cudaGetDeviceProperties");
        description_ = "cuda:" + std::to_string(gpu) + " " + prop.name + ", transport " +
                       (nccl_ ? "nccl" : "mpi (staged through pinned host memory)");
        context_ = make_cuda_context(gpu);
        elements_ = make_cuda_element_ops();
        ops_ = make_cuda_ops(context_->tracker());
    }
    std::unique_ptr<Communicator> communicator(MPI_Comm comm) override {
        std::unique_ptr<Transport> t =
            nccl_ ? make_nccl_transport(comm)
                  : std::make_unique<StagedTransport>(std::make_unique<MpiTransport>(comm),
                                                      mpi_stream(), context_->tracker());
        return std::make_unique<Communicator>(comm, std::move(t), *elements_, *context_);
    }
    std::string describe() const override { return description_; }
    bool stages_comm_through_host() const override { return !nccl_; }
    std::optional<std::size_t> device_bytes_in_use() override {
        std::size_t free = 0, total = 0;
        cuda::check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
        return total - free;
    }

  private:
    // The staged transport's MPI calls run on this host worker (never in a CUDA host function).
    std::unique_ptr<Stream> mpi_stream() const {
        const int gpu = context_->device().index;
        return std::make_unique<CpuStream>("mpi", std::make_shared<StreamGroupState>(),
                                           [gpu] { cudaSetDevice(gpu); });
    }

    bool nccl_ = true;
    std::string description_;
};
} // namespace

std::unique_ptr<Backend> make_cuda_backend(MPI_Comm world, const CudaOptions& options) {
    return std::make_unique<CudaBackend>(world, options);
}

} // namespace shardlab
