// `shardlab calibrate --out PROFILE.json`: measures this machine and rank layout into a machine
// profile (measure/calibrate.h) and writes it; `--show NAME|FILE` prints a built-in or a written
// profile instead (no MPI needed: launch/main.cpp). docs/TIME.md says what each value is.
#include "comm/agreement.h"
#include "core/error.h"
#include "launch/cli_util.h"
#include "launch/commands.h"
#include "launch/device_options.h"
#include "launch/flag_checks.h"
#include "launch/model_options.h"
#include "launch/sweep_options.h"
#include "measure/calibrate.h"
#include "plan/builtin_profiles.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>

namespace shardlab {

namespace {
struct CalibrateOptions {
    ModelOptions model;
    int micro_batch = 1, reps = 5, sweep_reps = 3;
    std::string dtypes = "fp32,bf16,fp16", out, show, copy_bytes = "16M";
    double adamw_params = 0; // 0: the model's parameters, at most 4M
    SweepOptions sweep{"4K", "4M", 4, 5, 2};
    DeviceOptions device;
};

// Before anything is measured: a profile that cannot be written is found in a second, not after
// the whole calibration.
void check_writable(const std::string& path) {
    const std::string probe = path + ".tmp";
    std::FILE* f = std::fopen(probe.c_str(), "wb");
    if (!f)
        throw UsageError("cannot write --out " + path + ": " +
                         write_failure(errno, "name a file in a writable directory"));
    std::fclose(f);
    std::remove(probe.c_str());
}

CalibrateSpec make_spec(const CalibrateOptions& o) {
    CalibrateSpec spec = calibrate_spec_for(o.model.config(), o.micro_batch);
    for (const std::string& name : split_list(o.dtypes)) spec.dtypes.push_back(parse_dtype(name));
    spec.reps = o.reps;
    spec.copy_bytes = parse_size(o.copy_bytes);
    if (o.adamw_params > 0) spec.adamw_params = std::int64_t(o.adamw_params);
    spec.sweep.sizes = sweep_sizes(o.sweep);
    spec.sweep.iters = o.sweep.iters, spec.sweep.warmup = o.sweep.warmup;
    spec.sweep.reps = o.sweep_reps;
    if (spec.dtypes.empty()) throw UsageError("--dtypes needs at least one of fp32, bf16, fp16");
    if (o.reps < 1 || o.sweep_reps < 1) throw UsageError("--reps and --sweep-reps must be >= 1");
    if (spec.copy_bytes == 0 || spec.adamw_params < 1)
        throw UsageError("--copy-bytes and --adamw-params must be positive");
    if (spec.sweep.sizes.size() < 2)
        throw UsageError("the fit of alpha and beta needs at least two sizes: -b " +
                         o.sweep.min_bytes + " -e " + o.sweep.max_bytes + " -f " +
                         std::to_string(o.sweep.factor) + " gives one; widen -e or lower -f");
    return spec;
}

void print_summary(const MachineProfile& p) {
    fmt::print("{}", describe_profile(p));
    for (const auto& [cls, l] : p.links)
        for (const auto& [op, c] : l.ops) {
            std::vector<std::string> rows;
            for (const CollectiveSample& s : c.samples)
                rows.push_back(fmt::format("{} B {:.1f}/{:.1f} us", s.bytes, s.seconds * 1e6,
                                           s.steps * c.fit.seconds(s.step_bytes) * 1e6));
            fmt::print("    {} {} measured/fitted: {}\n", cls, op, fmt::join(rows, ", "));
        }
}

int run_calibrate(const CalibrateOptions& o) {
    if (!o.show.empty()) {
        fmt::print("{}", describe_profile(load_profile(o.show)));
        return 0;
    }
    if (o.out.empty())
        throw UsageError("give --out PROFILE.json to calibrate this machine, or --show NAME|FILE "
                         "to print a profile (built-ins: " +
                         builtin_profile_list() + ")");
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CalibrateSpec spec;
    collectively(
        [&] {
            check_device_options(o.device);
            spec = make_spec(o);
            if (rank == 0) check_writable(o.out);
        },
        MPI_COMM_WORLD);
    const auto backend = make_backend(o.device, MPI_COMM_WORLD);
    const auto world = backend->communicator(MPI_COMM_WORLD);
    world->set_node_layout(NodeLayout::from_flag(world->mpi_comm(), o.sweep.ranks_per_node));
    if (rank == 0)
        spec.progress = [](const std::string& what) {
            fmt::print("# calibrate: {}\n", what);
            std::fflush(stdout);
        };
    const MachineProfile p = calibrate_machine(*backend, *world, spec);
    if (rank == 0) {
        write_json_file(o.out, profile_to_json(p));
        print_summary(p);
        fmt::print("wrote {}\n", o.out);
    }
    return 0;
}
} // namespace

CommandRunner add_calibrate_command(CLI::App& cmd) {
    auto o = std::make_shared<CalibrateOptions>();
    cmd.add_option("--out", o->out, "Write the measured profile to this JSON file");
    cmd.add_option("--show", o->show,
                   "Print a profile instead: a built-in's name (" + builtin_profile_list() +
                       ") or a file");
    add_model_options(cmd, o->model);
    cmd.add_option("--micro-batch", o->micro_batch,
                   "Sequences per micro-batch: the GEMMs' M is micro-batch x --seq")
        ->check(at_least(1));
    cmd.add_option("--dtypes", o->dtypes, "GEMM and memory-bound kernel dtypes, comma-separated");
    cmd.add_option("--reps", o->reps, "Timings per GEMM shape, kernel and copy (the median)");
    cmd.add_option("--copy-bytes", o->copy_bytes, "Host<->device copy size (K/M/G suffixes)");
    cmd.add_option("--adamw-params", o->adamw_params,
                   "AdamW array for the device and host rates (default: the model's "
                   "parameters, at most 4Mi)");
    add_sweep_options(cmd, o->sweep);
    cmd.add_option("--sweep-reps", o->sweep_reps, "Timings per collective size (the fastest)");
    add_device_options(cmd, o->device);
    return [o] { return run_calibrate(*o); };
}

} // namespace shardlab
