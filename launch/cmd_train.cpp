// `shardlab train`: registers the flags, applies --config and --deepspeed-config (flags win), and
// runs the training (launch/trainer.cpp) — or, with --print-config, prints the options instead.
#include "comm/agreement.h"
#include "launch/cli_util.h"
#include "launch/commands.h"
#include "launch/config_file.h"
#include "launch/deepspeed_config.h"
#include "launch/trainer.h"
#include "optim/checkpoint.h"

#include <fmt/format.h>
#include <mpi.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace shardlab {

namespace {
// The options as the run would start with them, before the checks that need data or a model.
nlohmann::json effective_options(const TrainOptions& o, int ranks) {
    const bool fresh = o.init.empty();
    const ModelConfig model = o.model.config();
    nlohmann::json j = train_options_json(
        o, fresh ? config_to_json(model) : nlohmann::json("from --init " + o.init),
        fresh ? model.context : 0, effective_grad_accum(o, ranks));
    j["ranks"] = ranks;
    return j;
}
} // namespace

CommandRunner add_train_command(CLI::App& cmd) {
    auto o = std::make_shared<TrainOptions>();
    add_train_options(cmd, *o);
    return [o, &cmd] {
        int ranks = 1, rank = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &ranks);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        const std::set<std::string> cli = command_line_flags(cmd); // before any file applies
        std::vector<std::string> lines;
        nlohmann::json printed;
        // Every rank reads the files itself (a node may lack one): rank 0 reports any failure. The
        // agreement is watched with the command line's --collective-timeout (a file may change
        // it for the run): a rank stuck reading a file on a hung mount is named, not waited for.
        WatchedComm agree(MPI_COMM_WORLD, o->collective_timeout);
        collectively(
            [&] {
                if (!o->config_file.empty()) apply_config_file(cmd, o->config_file);
                if (!o->deepspeed_config.empty())
                    lines = apply_deepspeed_config(cmd, *o, cli, ranks);
                if (o->print_config) printed = effective_options(*o, ranks);
            },
            agree);
        // Continuing a run writes into its directory unless told otherwise: `--resume DIR` alone
        // must not start a second report in the default ./out (nor, for DIR/checkpoint, a run
        // inside the checkpoint).
        if (!o->resume.empty() && cmd.get_option("--out")->count() == 0)
            o->out = run_directory_of(o->resume);
        if (rank == 0) {
            for (const std::string& line : lines) fmt::print("{}\n", line);
            if (o->print_config) fmt::print("{}\n", printed.dump(2));
            std::fflush(stdout);
        }
        return o->print_config ? 0 : run_training(*o);
    };
}

} // namespace shardlab
