// shardlab: the command-line entry point. Parses flags (before MPI starts, so a bad flag is
// reported once and never hangs), runs the chosen subcommand, and turns errors into messages:
// a usage error exits 2 on every rank; any other error on one rank aborts all ranks promptly.
#include "core/error.h"
#include "launch/cli_util.h"
#include "launch/commands.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <map>

using namespace shardlab;

namespace {
int report_and_exit(const std::exception& e, bool usage) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    const bool mpi_live = initialized && !finalized;
    int rank = launcher_rank(), size = 1;
    if (mpi_live) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    if (usage) {
        if (rank == 0) fmt::print(stderr, "shardlab: error: {}\n", e.what());
        if (mpi_live) MPI_Finalize();
        return 2;
    }
    fmt::print(stderr, "shardlab: rank {}: error: {}\n", rank, e.what());
    std::fflush(stderr);
    if (mpi_live && size > 1) MPI_Abort(MPI_COMM_WORLD, 1); // the other ranks stop too
    return 1;
}
} // namespace

int main(int argc, char** argv) {
    CLI::App app{"shardlab: data-parallel training with ZeRO 0-3, and the bytes behind it"};
    app.require_subcommand(1);
    std::map<CLI::App*, CommandRunner> runners;
    CLI::App* device = app.add_subcommand("device", "Show the CUDA devices this build can use");
    runners[device] = add_device_command(*device);

    CLI::App* coll = app.add_subcommand("collectives", "Teach and benchmark the collectives");
    coll->require_subcommand(1);
    CLI::App* show = coll->add_subcommand("show", "Step-by-step walkthrough of one collective");
    CLI::App* bench = coll->add_subcommand("bench", "nccl-tests-style bandwidth benchmark");
    runners[show] = add_collectives_show_command(*show);
    runners[bench] = add_collectives_bench_command(*bench);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (launcher_rank() != 0) return e.get_exit_code() == 0 ? 0 : 2;
        int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }

    try {
        for (auto& [sub, run] : runners)
            if (sub->parsed()) {
                const bool needs_mpi = sub != device;
                if (!needs_mpi) return run();
                MpiSession mpi(argc, argv);
                return run();
            }
    } catch (const UsageError& e) {
        return report_and_exit(e, true);
    } catch (const std::exception& e) {
        return report_and_exit(e, false);
    }
    return 0;
}
