// A program whose ranks hang or disagree on purpose, for the collective watchdog's test
// (tests/watchdog_check.sh). Usage: watchdog MODE [ring|native], every rank running 6 all-gathers
// of 1000 floats with a 3 s collective timeout, except:
//   stop      the last rank stops itself (SIGSTOP) before the third call: a hang
//   mismatch  rank 1 reduce-scatters where the others all-gather in the third call
//   slow      rank 1 sleeps 1 s (below the timeout) before the third call: must finish, exit 0
//   group     as stop, but the calls run in a "replicate" group of world ranks 1..N-1 (rank 0
//             alone in its own): the report must name the stopped rank by its world rank
#include "comm/mpi_session.h"
#include "core/error.h"
#include "launch/cli_util.h"
#include "model/backend.h"

#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace shardlab;

int main(int argc, char** argv) {
    MpiSession mpi(argc, argv);
    const std::string mode = argc > 1 ? argv[1] : "";
    const Algo algo = parse_algo(argc > 2 ? argv[2] : "ring");
    return run_guarded([&] {
        check(mode == "stop" || mode == "mismatch" || mode == "slow" || mode == "group",
              "usage: watchdog stop|mismatch|slow|group [ring|native]");
        const auto backend = make_cpu_backend(1);
        int rank = 0, n = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        MPI_Comm group = MPI_COMM_NULL;
        MPI_Comm_split(MPI_COMM_WORLD, mode == "group" && rank > 0 ? 1 : 0, rank, &group);
        const auto comm = backend->communicator(mode == "group" ? group : MPI_COMM_WORLD);
        MPI_Comm_free(&group); // the communicator holds duplicates
        if (mode == "group") comm->set_name("replicate");
        comm->set_collective_timeout(3.0);
        const std::size_t count = 1000;
        std::vector<float> mine(count, float(rank)), all(count); // chunk-sized use of `mine`
        for (int call = 1; call <= 6; ++call) {
            if (call == 3 && (mode == "stop" || mode == "group") && rank == n - 1)
                std::raise(SIGSTOP);
            if (call == 3 && mode == "slow" && rank == 1)
                std::this_thread::sleep_for(std::chrono::milliseconds(1000));
            comm->label_next("call " + std::to_string(call));
            if (call == 3 && mode == "mismatch" && rank == 1)
                comm->reduce_scatter(all.data(), mine.data(), count, DType::f32, ReduceOp::sum,
                                     algo);
            else
                comm->all_gather(mine.data(), all.data(), count, DType::f32, algo);
            comm->synchronize();
        }
        if (rank == 0) std::printf("all 6 collectives completed\n");
        return 0;
    });
}
