// A program where rank 1 fails while the others wait in a collective: through the same error
// path as `shardlab`, every rank must exit promptly (non-zero, with rank 1's message), no hang.
#include "comm/mpi_session.h"
#include "core/error.h"
#include "launch/cli_util.h"
#include "model/backend.h"

#include <mpi.h>

#include <vector>

using namespace shardlab;

int main(int argc, char** argv) {
    MpiSession mpi(argc, argv);
    return run_guarded([] {
        const auto backend = make_cpu_backend(1);
        const auto comm = backend->communicator(MPI_COMM_WORLD);
        if (comm->rank() == 1)
            throw Error("simulated failure on rank 1 (a corrupt input file, say)");
        std::vector<float> buf(1024, 1.0f);
        comm->all_reduce(buf.data(), buf.data(), buf.size(), DType::f32); // rank 1 never joins
        comm->synchronize();
        return 0;
    });
}
