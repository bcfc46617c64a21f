// Each subcommand registers its options on the CLI and returns the function that runs it.
// Runners get the MPI-launched argc/argv only through MpiSession, started after parsing.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace shardlab {

using CommandRunner = std::function<int()>;

CommandRunner add_device_command(CLI::App& app);
CommandRunner add_collectives_show_command(CLI::App& collectives);
CommandRunner add_collectives_bench_command(CLI::App& collectives);
CommandRunner add_init_command(CLI::App& cmd);
CommandRunner add_eval_command(CLI::App& cmd);
CommandRunner add_reference_command(CLI::App& cmd);
CommandRunner add_bench_step_command(CLI::App& cmd);
CommandRunner add_plan_command(CLI::App& cmd);
CommandRunner add_train_command(CLI::App& cmd);
CommandRunner add_bench_adamw_command(CLI::App& cmd);
CommandRunner add_bench_attention_command(CLI::App& cmd);
CommandRunner add_checkpoint_command(CLI::App& cmd);
CommandRunner add_report_command(CLI::App& cmd);
CommandRunner add_calibrate_command(CLI::App& cmd);

} // namespace shardlab
