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
    explicit CpuBackend(int threads) {
        cpu::set_threads(threads);
        // OpenMP's thread count is per calling thread: each stream's worker sets its own.
        context_ = make_cpu_context([threads] { cpu::set_thread_team(threads); });
        elements_ = std::make_unique<CpuElementOps>();
        ops_ = std::make_unique<CpuOps>(context_->tracker());
    }
    std::unique_ptr<Communicator> communicator(MPI_Comm comm) override {
        return std::make_unique<Communicator>(comm, std::make_unique<MpiTransport>(comm),
                                              *elements_, *context_);
    }
};
} // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) {
    return std::make_unique<CpuBackend>(threads);
}

} // namespace shardlab
