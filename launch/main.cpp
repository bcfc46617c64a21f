// shardlab: the command-line entry point. Parses flags (before MPI starts, so a bad flag is
// reported once and never hangs), runs the chosen subcommand, and turns errors into messages:
// see run_guarded in launch/cli_util.h.
#include "comm/mpi_session.h"
#include "launch/cli_util.h"
#include "launch/commands.h"
#include "model/kernels/cpu/blas_kernel.h"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

using namespace shardlab;

int main(int argc, char** argv) {
    // Before anything else: if OpenBLAS fell back to its generic kernel on this CPU, run again
    // with the right one (OpenBLAS reads OPENBLAS_CORETYPE only when it loads).
    if (const std::string core = cpu::openblas_kernel_override(); !core.empty()) {
        setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
        execv("/proc/self/exe", argv); // returns only on failure: carry on with the slow kernel
    }
    CLI::App app{"shardlab: data-parallel training with ZeRO 0-3, and the bytes behind it"};
    app.require_subcommand(1);
    // A flag given twice takes its last value (scripts append overrides); subcommands inherit this.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    std::map<CLI::App*, CommandRunner> runners;
    CLI::App* device = app.add_subcommand("device", "Show the CUDA devices this build can use");
    runners[device] = add_device_command(*device);

    CLI::App* coll = app.add_subcommand("collectives", "Teach and benchmark the collectives");
    coll->require_subcommand(1);
    CLI::App* show = coll->add_subcommand("show", "Step-by-step walkthrough of one collective");
    CLI::App* bench = coll->add_subcommand("bench", "nccl-tests-style bandwidth benchmark");
    runners[show] = add_collectives_show_command(*show);
    runners[bench] = add_collectives_bench_command(*bench);

    // Model commands: init and reference run in one process without MPI; eval runs under it.
    CLI::App* init = app.add_subcommand("init", "Write freshly initialised weights of any family");
    CLI::App* eval = app.add_subcommand("eval", "Mean cross-entropy of weights over a data file");
    CLI::App* ref =
        app.add_subcommand("reference", "Outputs the PyTorch reference checks compare against");
    runners[init] = add_init_command(*init);
    runners[eval] = add_eval_command(*eval);
    runners[ref] = add_reference_command(*ref);
    CLI::App* bench_group = app.add_subcommand("bench", "Benchmarks of shardlab's own parts");
    bench_group->require_subcommand(1);
    CLI::App* bench_step = bench_group->add_subcommand("step", "Time a training step on one rank");
    runners[bench_step] = add_bench_step_command(*bench_step);
    CLI::App* bench_adamw =
        bench_group->add_subcommand("adamw", "Host AdamW throughput against its bandwidth bound");
    runners[bench_adamw] = add_bench_adamw_command(*bench_adamw);
    CLI::App* bench_attention = bench_group->add_subcommand(
        "attention", "Causal attention alone: flash against materialize, forward + backward");
    runners[bench_attention] = add_bench_attention_command(*bench_attention);
    CLI::App* train =
        app.add_subcommand("train", "Train data-parallel with ZeRO 0-3 (run under mpirun)");
    runners[train] = add_train_command(*train);
    CLI::App* plan = app.add_subcommand("plan", "Predict per-rank memory and traffic for any size");
    runners[plan] = add_plan_command(*plan);
    CLI::App* ckpt =
        app.add_subcommand("checkpoint", "Inspect a training checkpoint, or export its weights");
    runners[ckpt] = add_checkpoint_command(*ckpt);
    CLI::App* report =
        app.add_subcommand("report", "Plots and a one-page summary of a training run's --out DIR");
    runners[report] = add_report_command(*report);
    CLI::App* calibrate = app.add_subcommand(
        "calibrate", "Measure this machine's rates into a profile for the time model (mpirun)");
    runners[calibrate] = add_calibrate_command(*calibrate);
    const std::set<CLI::App*> without_mpi = {device,          init, ref,  bench_adamw,
                                             bench_attention, plan, ckpt, report};

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // Rank 0 prints the message and its exit code is the job's; the others leave quietly
        // with 0: one leaving non-zero first would have mpirun kill rank 0 before it printed.
        if (launcher_rank() != 0) return 0;
        int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }

    for (auto& [sub, run] : runners) {
        if (!sub->parsed()) continue;
        // `calibrate --show` only reads a profile; `bench attention` on a GPU makes a backend,
        // which is collective over MPI_COMM_WORLD.
        const bool shows = sub == calibrate && calibrate->get_option("--show")->count() > 0;
        const CLI::Option* device = bench_attention->get_option("--device");
        const bool on_gpu =
            sub == bench_attention && device->count() > 0 && device->as<std::string>() != "cpu";
        if ((without_mpi.count(sub) && !on_gpu) || shows) return run_guarded(run);
        MpiSession mpi(argc, argv);
        return run_guarded(run);
    }
    return 0;
}
