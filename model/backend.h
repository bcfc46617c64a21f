// Backend: what a rank computes and communicates with — a device context (device, three streams,
// tracked stream-ordered memory), the Ops that compute on it, the element operations collectives
// reduce with, and the transport its communicators move bytes over. The model, the ZeRO engine,
// offload and the collectives are the same code on every backend; launch/ picks one, once.
#pragma once

#include "comm/communicator.h"
#include "comm/element_ops.h"
#include "core/device_context.h"
#include "model/ops.h"

#include <mpi.h>

#include <memory>
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
std::unique_ptr<Backend> make_cpu_backend(int threads, const std::string& comm_cpus = "");

} // namespace shardlab
