// The CPU backend's parts.
#include "comm/cpu_element_ops.h"
#include "comm/mpi_transport.h"
#include "model/backend.h"
#include "model/kernels/cpu/threads.h"
#include "model/ops_cpu.h"

namespace shardlab {

namespace {
class CpuBackend : public Backend {
  public:
    CpuBackend(int threads, const std::string& comm_cpus, const std::string& gemm)
        : threads_(threads) {
        cpu::set_threads(threads);
        const std::vector<int> pinned = cpu::parse_cpu_list(comm_cpus);
        // OpenMP's thread count is per calling thread: each stream's worker sets its own.
        context_ = make_cpu_context([threads, pinned](const std::string& stream) {
            cpu::set_thread_team(threads);
            if (stream != "compute") cpu::pin_thread(pinned);
        });
        elements_ = std::make_unique<CpuElementOps>();
        ops_ = std::make_unique<CpuOps>(context_->tracker(), gemm);
    }
    std::string describe() const override {
        return "cpu, " + std::to_string(threads_) + " thread" + (threads_ == 1 ? "" : "s");
    }
    GemmWorkspace gemm_workspace(DType t) const override {
        if (static_cast<const CpuOps&>(*ops_).gemm_paths().of(t) != cpu::GemmLibrary::openblas)
            return GemmWorkspace::unmodelled; // oneDNN sizes its scratchpad
        return t == DType::f32 ? GemmWorkspace::none : GemmWorkspace::widened_operands;
    }
    std::unique_ptr<Communicator> communicator(MPI_Comm comm) override {
        return std::make_unique<Communicator>(comm, std::make_unique<MpiTransport>(comm),
                                              *elements_, *context_);
    }

  private:
    int threads_;
};
} // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads, const std::string& comm_cpus,
                                          const std::string& gemm) {
    return std::make_unique<CpuBackend>(threads, comm_cpus, gemm);
}

} // namespace shardlab
