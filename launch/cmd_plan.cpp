// `shardlab plan`: does it fit, on which ZeRO stage, and what does it cost on the wire? Prints
// the per-rank memory (exact bytes, GB and GiB) and the per-step traffic of plan/memory_plan.h;
// --compare puts stages 0-3 x offload side by side, --sweep-ranks shows memory falling with N,
// --estimator deepspeed adds DeepSpeed's own estimate beside shardlab's (launch/plan_deepspeed.h);
// --plot draws the per-rank memory through tools/plot_plan_memory.py.
#include "core/error.h"
#include "launch/cli_util.h"
#include "launch/commands.h"
#include "launch/config_file.h"
#include "launch/flag_checks.h"
#include "launch/model_options.h"
#include "launch/plan_deepspeed.h"
#include "launch/plan_fit.h"
#include "launch/plan_json.h"
#include "launch/python_tool.h"
#include "launch/train_report.h"
#include "model/family.h"
#include "model/model_presets.h"
#include "plan/builtin_profiles.h"
#include "plan/memory_plan.h"
#include "plan/time_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <unistd.h>

namespace shardlab {

namespace {
struct PlanFlags {
    std::string preset, arch = "gpt2", precision = "bf16", opt_states = "fp32", checkpoint = "none",
                        attention = "flash";
    std::string gpu, json_path, sweep, estimator = "shardlab", plot, python = kDefaultPython;
    std::string shard_group, secondary_shard; // "" (flat / none), S or "node"; "node"
    std::string profile;                      // --profile FILE | a built-in: the time model's rates
    std::string gemm;                         // --gemm: whose workspace to predict ("": by --gpu)
    ModelFields model; // --layers ... --seq (--seq is also the plan's sequence length)
    int vocab_multiple = ModelConfig::kDefaultVocabMultiple;
    double params = 0;
    int ranks = 0, nodes = 0, gpus_per_node = 0, ranks_per_node = 0, zero = 0, micro_batch = 1,
        grad_accum = 1, prefetch = 0, rank = 0, global_batch = 0, top = 5;
    bool offload = false, no_master = false, inference = false, compare = false, time = false,
         reproducible = false, fit = false;
    std::set<std::string> given; // the flags on the command line, "--rank", ...
};

bool given(const PlanFlags& f, const std::string& flag) {
    return f.given.count(flag) > 0;
}

PlanModel build_model(const PlanFlags& f) {
    if (f.params > 0) {
        const ModelFields& m = f.model;
        if (!f.preset.empty() || m.layers || m.hidden || m.heads || m.kv_heads || m.ffn || m.vocab)
            throw UsageError("--params describes the model by its size alone; drop --preset and "
                             "the model fields (--layers, --hidden, --heads, --kv-heads, --ffn, "
                             "--vocab)");
        return plan_model_params_only(f.params);
    }
    // The base: the preset, else the plan preset of --arch's family; each field given replaces
    // the base's.
    const Architecture arch = parse_architecture(f.arch);
    ModelConfig c = apply_model_fields(
        model_preset(f.preset.empty() ? family(arch).plan_preset : f.preset), f.model);
    const Family& fam = family(c.arch);
    c.vocab_multiple = f.vocab_multiple;
    return plan_model_from(c, f.preset.empty() ? std::string(fam.name) + " (fields)" : f.preset);
}

// Nodes of K consecutive ranks (--gpus-per-node or --ranks-per-node K) for the bytes by link
// class; without either, one node (every byte intra-node).
NodeLayout node_blocks(const PlanFlags& f, int ranks) {
    const int k = f.nodes ? f.gpus_per_node : f.ranks_per_node;
    return k > 0 ? NodeLayout::blocks(ranks, k) : NodeLayout{};
}

// The ranks of one node, for --shard-group node and --secondary-shard node.
int node_size(const PlanFlags& f, const char* flag) {
    const int k = f.nodes ? f.gpus_per_node : f.ranks_per_node;
    if (k < 1)
        throw UsageError(fmt::format("{} node needs the nodes: give --nodes N --gpus-per-node G "
                                     "or --ranks-per-node K",
                                     flag));
    return k;
}

// --shard-group S|node as a rank count (0: the world); the plan checks that S divides N.
int shard_group_size(const PlanFlags& f) {
    if (f.shard_group.empty()) return 0;
    if (f.shard_group == "node") return node_size(f, "--shard-group");
    int s = 0;
    const auto [end, ec] =
        std::from_chars(f.shard_group.data(), f.shard_group.data() + f.shard_group.size(), s);
    if (ec != std::errc() || end != f.shard_group.data() + f.shard_group.size() || s < 1)
        throw UsageError("--shard-group " + f.shard_group +
                         " is not a group size; give a rank count S dividing N, or 'node'");
    return s;
}

int secondary_shard_size(const PlanFlags& f) {
    if (f.secondary_shard.empty()) return 0;
    if (f.secondary_shard != "node")
        throw UsageError("--secondary-shard " + f.secondary_shard +
                         " is not a secondary shard group; use 'node' (ZeRO++ hpZ)");
    return node_size(f, "--secondary-shard");
}

// --gemm openblas (the CPU backend's default path; without --gpu the default) has a workspace
// the plan counts; onednn and cublas (with --gpu the default) size their own.
GemmWorkspace gemm_workspace_of(const PlanFlags& f, Precision p) {
    const std::string g = f.gemm.empty() ? (f.gpu.empty() ? "openblas" : "cublas") : f.gemm;
    if (g == "openblas")
        return p == Precision::fp32 ? GemmWorkspace::none : GemmWorkspace::widened_operands;
    if (g == "onednn" || g == "cublas") return GemmWorkspace::unmodelled;
    throw UsageError("--gemm " + g + " is not a GEMM library; use openblas, onednn or cublas");
}

// N: --nodes x --gpus-per-node, else --ranks, else 1 (--sweep-ranks gives its own).
int plan_ranks(const PlanFlags& f) {
    if (!f.nodes && !f.gpus_per_node) return f.ranks ? f.ranks : 1;
    if (f.nodes < 1 || f.gpus_per_node < 1)
        throw UsageError("give both --nodes and --gpus-per-node (>= 1)");
    const int n = f.nodes * f.gpus_per_node;
    if (f.ranks && f.ranks != n)
        throw UsageError(fmt::format("--ranks {} contradicts --nodes {} x --gpus-per-node {} = "
                                     "{}; give one or the other",
                                     f.ranks, f.nodes, f.gpus_per_node, n));
    if (f.ranks_per_node && f.ranks_per_node != f.gpus_per_node)
        throw UsageError(fmt::format("--ranks-per-node {} contradicts --gpus-per-node {}; give "
                                     "one or the other",
                                     f.ranks_per_node, f.gpus_per_node));
    return n;
}

// --sweep-ranks sets N itself, and plans rank 0 of each.
void check_sweep_flags(const PlanFlags& f) {
    if (f.sweep.empty()) return;
    if (f.ranks) throw UsageError("--sweep-ranks sets the rank count N itself; drop --ranks / -n");
    if (f.nodes || f.gpus_per_node)
        throw UsageError("--sweep-ranks sets the rank count N itself, which --nodes x "
                         "--gpus-per-node fixes; give the node size with --ranks-per-node K "
                         "instead");
    if (given(f, "--rank"))
        throw UsageError("--sweep-ranks plans rank 0 of each rank count; drop --rank");
}

// Flags a mode would ignore are refused, not dropped: --global-batch and --top steer --fit's
// search; an --inference plan (the weights and the KV cache) has no optimizer, gradients or step.
void check_unused_flags(const PlanFlags& f) {
    if (!f.fit)
        for (const char* flag : {"--global-batch", "--top"})
            if (given(f, flag))
                throw UsageError(
                    fmt::format("{} sets the --fit search; add --fit or drop {}", flag, flag));
    if (!f.inference) return;
    std::vector<std::string> ignored;
    for (const char* flag :
         {"--grad-accum", "--checkpoint", "--reproducible", "--no-master", "--optimizer-states",
          "--shard-group", "--secondary-shard", "--prefetch"})
        if (given(f, flag)) ignored.push_back(flag);
    if (!ignored.empty())
        throw UsageError(fmt::format("--inference plans the weights and the KV cache, no training "
                                     "step; drop the training flag{} {}",
                                     ignored.size() > 1 ? "s" : "", fmt::join(ignored, ", ")));
}

PlanOptions build_options(const PlanFlags& f, int ranks) {
    PlanOptions o;
    o.ranks = ranks;
    o.nodes = node_blocks(f, o.ranks);
    o.shard_group = shard_group_size(f);
    o.secondary_shard = secondary_shard_size(f);
    o.zero = f.zero;
    o.offload = f.offload;
    o.reproducible = f.reproducible;
    o.precision = parse_precision(f.precision);
    o.master = !f.no_master;
    if (f.opt_states == "fp32")
        o.optimizer_states = OptimizerStates::fp32;
    else if (f.opt_states == "bf16")
        o.optimizer_states = OptimizerStates::bf16;
    else if (f.opt_states == "8bit")
        o.optimizer_states = OptimizerStates::int8;
    else
        throw UsageError("--optimizer-states must be fp32, bf16 or 8bit");
    o.checkpoint = parse_checkpoint(f.checkpoint);
    o.attention = parse_attention(f.attention);
    o.micro_batch = f.micro_batch;
    o.seq = f.model.seq;
    o.grad_accum = f.grad_accum;
    o.prefetch = f.prefetch;
    o.inference = f.inference;
    if (!f.gpu.empty()) o.gpu_bytes = parse_gpu(f.gpu), o.gpu_name = f.gpu;
    o.gemm_workspace = gemm_workspace_of(f, o.precision);
    if (f.rank < 0 || f.rank >= o.ranks)
        throw UsageError(fmt::format("--rank {} is not one of 0..{}", f.rank, o.ranks - 1));
    return o;
}

std::string gb(std::uint64_t b) {
    return fmt::format("{:.2f} GB / {:.2f} GiB", double(b) / 1e9, double(b) / double(1ull << 30));
}

// The --gpu line. Only a model with a shape has activations, so only it has a largest
// micro-batch; a bare parameter count is judged on its model states alone.
std::string fit_verdict(const Plan& p) {
    const MemoryPlan& m = p.memory;
    if (m.params + m.grads + m.master + m.optimizer > p.options.gpu_bytes)
        return "DOES NOT FIT: the model states alone exceed it";
    if (p.model.arch() == Architecture::params_only)
        return "the model states fit (a bare parameter count: activations and buffers not counted)";
    if (p.max_micro_batch == 0) return "DOES NOT FIT, not even at micro-batch 1";
    const std::string verdict = fmt::format(
        "{} at micro-batch {}", p.fits ? "fits" : "DOES NOT FIT", p.options.micro_batch);
    if (p.max_micro_batch_unbounded && p.options.reproducible)
        return verdict + "; any micro-batch fits (--reproducible runs one sequence a pass: the "
                         "micro-batch does not change memory)";
    if (p.max_micro_batch_unbounded)
        return fmt::format("{}; every micro-batch up to {} fits (memory grows too little with it "
                           "to find the largest)",
                           verdict, p.max_micro_batch);
    return fmt::format("{}; largest micro-batch that fits: {}", verdict, p.max_micro_batch);
}

// " stored (124439808 in the model, V padded to 50304)" when the vocabulary is padded.
std::string padding_note(const PlanModel& m) {
    if (m.config.padded_vocab() == m.config.vocab) return "";
    return fmt::format(" stored ({} in the model, V padded to {})", m.unpadded_params(),
                       m.config.padded_vocab());
}

// "flat", "hsdp:S" (shards in groups of S, replicated across them) or "hpz:K" (a secondary shard
// over K ranks), or both joined by '+'.
std::string sharding_name(const PlanOptions& o) {
    std::string s = o.zero >= 1 && o.shard_group > 0 && o.shard_group != o.ranks
                        ? fmt::format("hsdp:{}", o.shard_group)
                        : "";
    if (o.secondary_shard > 0)
        s += (s.empty() ? "" : "+") + fmt::format("hpz:{}", o.secondary_shard);
    return s.empty() ? "flat" : s;
}

std::uint64_t inter_node_bytes(const CommPlan& c) {
    std::uint64_t b = 0;
    for (const auto& [op, l] : c.by_op_link) b += l.inter_node;
    return b;
}

void print_plan(const Plan& p) {
    const MemoryPlan& m = p.memory;
    const PlanOptions& o = p.options;
    if (p.model.arch() == Architecture::params_only)
        fmt::print("{}: {} parameters (model states only); {} rank(s), ZeRO-{}{}\n\n", p.model.name,
                   p.model.params, o.ranks, o.zero, o.offload ? " + offload" : "");
    else
        fmt::print("{}: {} parameters{}; {} rank(s), ZeRO-{}{}, {}{}, micro-batch {} x {}, "
                   "checkpoint {}, {} attention\n\n",
                   p.model.name, p.model.params, padding_note(p.model), o.ranks, o.zero,
                   std::string(o.offload ? " + offload" : "") +
                       (o.reproducible ? " + reproducible (one sequence a pass, int64 sums)" : ""),
                   o.inference ? "inference " : "",
                   o.precision == Precision::fp32
                       ? "fp32"
                       : (o.precision == Precision::bf16 ? "bf16" : "fp16"),
                   o.micro_batch, o.seq ? o.seq : p.model.config.context,
                   checkpoint_name(o.checkpoint), attention_name(o.attention));
    if (sharding_name(o) != "flat")
        fmt::print("sharding {}: ZeRO over groups of {} ranks{}\n\n", sharding_name(o),
                   o.zero >= 1 && o.shard_group > 0 ? o.shard_group : o.ranks,
                   o.secondary_shard > 0
                       ? fmt::format(", backward's gathers from a secondary shard over {} ranks",
                                     o.secondary_shard)
                       : "");
    fmt::print("per rank, device:            bytes\n");
    auto row = [](const char* name, std::uint64_t b) {
        fmt::print("  {:<24} {:>16}  {}\n", name, b, gb(b));
    };
    row("params", m.params);
    row("grads", m.grads);
    row("master (fp32)", m.master);
    row("optimizer (m, v)", m.optimizer);
    row(m.activations_exact ? "activations (exact)" : "activations (generic)", m.activations);
    if (m.activations_exact) row("  generic formula", m.activations_generic);
    row("gathered + comm buffers", m.buffers);
    if (m.workspace)
        row("workspace (not in total)", *m.workspace);
    else if (p.model.arch() != Architecture::params_only)
        fmt::print("  {:<24} {:>16}  (the GEMM library sizes its own: --gemm openblas to count "
                   "the CPU path's)\n",
                   "workspace", "-");
    if (o.inference) row("KV cache", m.kv_cache);
    row("device total", m.device_total);
    if (m.host_total) {
        fmt::print("per rank, host (offload):\n");
        row("master (fp32)", m.host_master);
        row("optimizer (m, v)", m.host_optimizer);
        row("grads (fp32)", m.host_grads);
        if (m.host_staging) row("copy staging tiles", m.host_staging);
        row("host total", m.host_total);
    }
    if (o.gpu_bytes) fmt::print("\n{} ({} B): {}\n", o.gpu_name, o.gpu_bytes, fit_verdict(p));
    if (o.inference) return;
    fmt::print("\nper step, bytes this rank sends:\n");
    const bool nodes = p.options.nodes.nodes() > 1;
    for (const auto& [op, b] : p.comm.by_op) {
        fmt::print("  {:<24} {:>16}  {}  ({} calls)", op, b, gb(b), p.comm.calls.at(op));
        const LinkBytes l = p.comm.by_op_link.at(op);
        if (nodes) fmt::print(": intra-node {}, inter-node {}", l.intra_node, l.inter_node);
        fmt::print("\n");
    }
    fmt::print("  {:<24} {:>16}  {}  ({:.3f}x data parallel)\n", "total", p.comm.bytes_per_step,
               gb(p.comm.bytes_per_step), p.comm.ratio_to_dp);
    if (o.offload)
        fmt::print("  {:<24} {:>16}  device->host {} + host->device {}\n", "offload copies",
                   p.comm.device_to_host + p.comm.host_to_device, p.comm.device_to_host,
                   p.comm.host_to_device);
    if (p.reproducible_cost)
        fmt::print(
            "\n--reproducible costs: {} bytes sent per step ({:.2f}x the {} without it), "
            "{} device bytes ({:.2f}x the {} without it)\n",
            p.comm.bytes_per_step,
            double(p.comm.bytes_per_step) /
                double(std::max<std::uint64_t>(1, p.reproducible_cost->default_bytes_per_step)),
            p.reproducible_cost->default_bytes_per_step, p.memory.device_total,
            double(p.memory.device_total) /
                double(std::max<std::uint64_t>(1, p.reproducible_cost->default_device_total)),
            p.reproducible_cost->default_device_total);
}

// The most any rank sends across nodes per step: in a flat ring only the ranks at a node's edge
// do, so --rank's own figure (often 0) says little in a comparison.
std::uint64_t busiest_inter_node(const PlanModel& model, const PlanOptions& o) {
    PlanOptions t = o;
    t.gpu_bytes = 0; // the bytes only: no largest-micro-batch search for every rank
    std::uint64_t most = 0;
    if (o.nodes.nodes() > 1)
        for (int r = 0; r < o.ranks; ++r)
            most = std::max(most, inter_node_bytes(make_plan(model, t, r).comm));
    return most;
}

// links: two more columns, the sharding and the most bytes a rank sends across nodes per step.
void print_table_row(const Plan& p, bool header, bool links, std::uint64_t inter) {
    if (header)
        fmt::print("{:>6} {:>5} {:>8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>14}{}\n",
                   "ranks", "zero", "offload", "params GB", "grads GB", "optim GB", "activ GB",
                   "buffers GB", "device GB", "host GB", "comm GB/step",
                   links ? fmt::format(" {:>15} {:>18}", "sharding", "max inter GB/step") : "");
    const MemoryPlan& m = p.memory;
    auto g = [](std::uint64_t b) { return double(b) / 1e9; };
    fmt::print("{:>6} {:>5} {:>8} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} "
               "{:>12.3f} {:>14.3f}",
               p.options.ranks, p.options.zero, p.options.offload ? "yes" : "no", g(m.params),
               g(m.grads), g(m.master + m.optimizer), g(m.activations), g(m.buffers),
               g(m.device_total), g(m.host_total), g(p.comm.bytes_per_step));
    if (links) fmt::print(" {:>15} {:>18.3f}", sharding_name(p.options), g(inter));
    fmt::print("\n");
}

// DeepSpeed's num_nodes and num_gpus_per_node for the plan's ranks: --nodes x --gpus-per-node, or
// one node holding all --ranks.
DeepSpeedCluster deepspeed_cluster(const PlanFlags& f, const PlanOptions& o) {
    return f.nodes ? DeepSpeedCluster{f.nodes, f.gpus_per_node} : DeepSpeedCluster{1, o.ranks};
}

// --estimator deepspeed adds a table to one training plan; it is its own comparison of stages.
bool wants_deepspeed(const PlanFlags& f) {
    if (f.estimator == "shardlab") return false;
    if (f.estimator != "deepspeed")
        throw UsageError("--estimator '" + f.estimator +
                         "' is not known; use shardlab or deepspeed");
    if (f.compare || !f.sweep.empty())
        throw UsageError(
            "--estimator deepspeed already sets ZeRO-2 and ZeRO-3, with and without "
            "offload, side by side for one rank count; drop --compare / --sweep-ranks");
    if (f.inference)
        throw UsageError("--estimator deepspeed estimates training memory; drop --inference");
    if (f.no_master)
        throw UsageError("--estimator deepspeed sets shardlab's optimizer offload beside "
                         "DeepSpeed's, and offload keeps an fp32 master; drop --no-master");
    return true;
}

// --plot must name a PNG in a directory that exists and can be written: checked before anything
// is computed.
void check_plot_path(const std::string& plot) {
    const std::filesystem::path p(plot);
    if (p.extension() != ".png")
        throw UsageError("--plot " + plot + ": the plot is a PNG; give a file name ending in .png");
    check_writable_directory(p.has_parent_path() ? p.parent_path().string() : ".",
                             "--plot " + plot);
}

// The plot script reads plan --json output: handed over in a temporary file.
void plot_plans(const nlohmann::json& plans, const PlanFlags& f) {
    std::string tmp = (std::filesystem::temp_directory_path() / "shardlab-plan-XXXXXX").string();
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) throw Error("--plot: cannot create a temporary file in " + tmp);
    ::close(fd);
    try {
        write_json_file(tmp, plans);
        fmt::print("{}", run_python_tool("--plot", "matplotlib", f.python,
                                         tool_script_path("plot_plan_memory.py"), {tmp, f.plot}));
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    std::remove(tmp.c_str());
}

// --time / --profile: the profile to predict step time with, or none.
std::optional<MachineProfile> time_profile(const PlanFlags& f) {
    if (f.profile.empty()) {
        if (f.time)
            throw UsageError("--time needs rates: give --profile FILE (from `shardlab calibrate "
                             "--out FILE`) or a built-in: " +
                             builtin_profile_list());
        return std::nullopt;
    }
    if (f.inference) throw UsageError("--time predicts a training step; drop --inference");
    return load_profile(f.profile);
}

// The time model beside each plan: the breakdown for one plan, a row per plan otherwise; and
// "time" in each plan's JSON.
void add_time(const std::vector<Plan>& plans, const MachineProfile& profile, const PlanFlags& f,
              nlohmann::json& out) {
    std::vector<TimePrediction> times;
    for (const Plan& p : plans) times.push_back(predict_time(p, profile, f.rank));
    fmt::print("\nprofile: {} ({}{})\n", profile.name, profile.layout,
               profile.cpu.empty() ? "" : ", " + profile.cpu);
    if (plans.size() == 1) {
        fmt::print("{}", describe_time(times[0]));
        out["time"] = time_json(times[0]);
        return;
    }
    fmt::print("  {:>5} {:>5} {:>7} {:>12} {:>12} {:>14}  {}\n", "ranks", "ZeRO", "offload",
               "step ms", "exposed ms", "tokens/s", "critical path");
    for (std::size_t i = 0; i < plans.size(); ++i) {
        const PlanOptions& o = plans[i].options;
        fmt::print("  {:>5} {:>5} {:>7} {:>12.3f} {:>12.3f} {:>14.1f}  {}\n", o.ranks, o.zero,
                   o.offload ? "yes" : "no", times[i].step_s * 1e3, times[i].exposed_comm_s * 1e3,
                   times[i].tokens_per_s, times[i].critical_path);
        out[i]["time"] = time_json(times[i]);
    }
}

// --compare's rows: stages 0-3 with and without offload, each with what of the given sharding
// applies to it (hpZ is ZeRO-3's; offload keeps an fp32 master, so no offload row under
// --no-master). On several nodes, the hybrid layouts beside them that are not already rows: HSDP
// (ZeRO 1-3 inside each node, replicated across nodes) and ZeRO++ hpZ (flat ZeRO-3, backward's
// gathers in the node).
std::vector<Plan> compare_plans(const PlanModel& model, const PlanOptions& o, int rank) {
    std::vector<Plan> plans;
    auto add = [&](int zero, bool offload, int shard_group, int secondary_shard) {
        PlanOptions t = o;
        t.zero = zero, t.offload = offload, t.prefetch = zero == 3 ? o.prefetch : 0;
        t.shard_group = shard_group, t.secondary_shard = zero == 3 ? secondary_shard : 0;
        plans.push_back(make_plan(model, t, rank));
    };
    auto listed = [&](int zero, int shard_group, int secondary_shard) {
        return std::any_of(plans.begin(), plans.end(), [&](const Plan& p) {
            return p.options.zero == zero && p.options.shard_group == shard_group &&
                   p.options.secondary_shard == secondary_shard;
        });
    };
    for (int zero = 0; zero <= 3; ++zero)
        for (bool offload : {false, true})
            if (!offload || o.master) add(zero, offload, o.shard_group, o.secondary_shard);
    if (o.nodes.nodes() > 1) {
        const int node = o.nodes.size() / o.nodes.nodes();
        for (int zero = 1; zero <= 3; ++zero)
            if (!listed(zero, node, 0)) add(zero, false, node, 0);
        if (!listed(3, 0, node)) add(3, false, 0, node);
    }
    return plans;
}

// The model as `train` takes it: the preset and the fields given beside it.
std::string train_model_flags(const PlanFlags& f) {
    std::string s = f.preset.empty() ? "" : " --preset " + f.preset;
    if (f.preset.empty() && f.arch != "gpt2") s += " --arch " + f.arch;
    auto add = [&](const char* flag, int v) {
        if (v) s += fmt::format(" {} {}", flag, v);
    };
    const ModelFields& m = f.model;
    add("--layers", m.layers), add("--hidden", m.hidden), add("--heads", m.heads);
    add("--kv-heads", m.kv_heads), add("--ffn", m.ffn), add("--vocab", m.vocab),
        add("--seq", m.seq);
    if (f.vocab_multiple != ModelConfig::kDefaultVocabMultiple)
        s += fmt::format(" --vocab-multiple {}", f.vocab_multiple);
    return s;
}

// --fit: the search over what the flags leave open, against --gpu's bytes and --profile's rates.
int run_fit(const PlanFlags& f, const PlanModel& model, const PlanOptions& o) {
    if (f.gpu.empty())
        throw UsageError("--fit needs a rank's memory: --gpu h100-80 (a100-40, a100-80, h200-141) "
                         "or a byte count, e.g. --gpu 2e9");
    if (f.profile.empty())
        throw UsageError("--fit ranks by predicted speed: give --profile FILE (from `shardlab "
                         "calibrate --out FILE`) or a built-in: " +
                         builtin_profile_list());
    if (f.compare || !f.sweep.empty() || f.inference || f.estimator != "shardlab" ||
        !f.plot.empty())
        throw UsageError("--fit is its own search; drop --compare, --sweep-ranks, --inference, "
                         "--estimator and --plot");
    if (f.top < 1) throw UsageError("--top must be at least 1");
    const FitRequest q{o.gpu_bytes, f.global_batch, f.top};
    const FitResult r = fit_search(model, o, load_profile(f.profile), q, f.rank);
    FitCommandLine cmd{
        train_model_flags(f),
        f.ranks_per_node && !f.nodes ? fmt::format(" --ranks-per-node {}", f.ranks_per_node) : ""};
    nlohmann::json out;
    const int status = print_fit(r, q, model, o, cmd, out);
    if (!f.json_path.empty()) write_json_file(f.json_path, {{"fit", out}});
    return status;
}

// --sweep-ranks: a plan of rank 0 for each N, its layout built for that N (--ranks-per-node K
// must divide each); an error names the N it is about.
std::vector<Plan> sweep_plans(const PlanFlags& f, const PlanModel& model) {
    std::vector<Plan> plans;
    for (const auto& n : split_list(f.sweep)) {
        int ranks = 0;
        const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), ranks);
        if (ec != std::errc() || end != n.data() + n.size() || ranks < 1)
            throw UsageError("--sweep-ranks: '" + n +
                             "' is not a rank count; give a comma-separated list of counts "
                             ">= 1, e.g. 1,4,16,64");
        try {
            plans.push_back(make_plan(model, build_options(f, ranks), 0));
        } catch (const UsageError& e) {
            throw UsageError(fmt::format("--sweep-ranks {}: {}", ranks, e.what()));
        }
    }
    return plans;
}

// Every refusal comes before the first line is printed: the paths, the flags that go together,
// the profile (--fit loads its own before it prints).
int run_plan(const PlanFlags& f) {
    if (!f.plot.empty()) check_plot_path(f.plot);
    if (!f.json_path.empty()) check_json_output(f.json_path, "--json"); // before the plan
    check_sweep_flags(f);
    check_unused_flags(f);
    const PlanModel model = build_model(f);
    if (f.fit) return run_fit(f, model, build_options(f, plan_ranks(f)));
    const bool deepspeed = wants_deepspeed(f);
    const std::optional<MachineProfile> profile = time_profile(f);
    const PlanOptions o = f.sweep.empty() ? build_options(f, plan_ranks(f)) : PlanOptions{};
    std::vector<Plan> plans;
    if (f.compare && !f.sweep.empty()) throw UsageError("use --compare or --sweep-ranks, not both");
    if (f.compare && f.inference)
        throw UsageError("--compare sets training's ZeRO stages and offload side by side; an "
                         "--inference plan has one layout (a full replica of the weights per "
                         "rank): drop --compare or --inference");
    if (f.compare) {
        plans = compare_plans(model, o, f.rank);
    } else if (!f.sweep.empty()) {
        plans = sweep_plans(f, model);
    } else {
        plans.push_back(make_plan(model, o, f.rank));
    }
    if (plans.size() == 1) {
        print_plan(plans[0]);
    } else {
        fmt::print("{}: {} parameters{}, per rank (GB = 1e9 B)\n", model.name, model.params,
                   padding_note(model));
        bool links = false; // the link columns when any plan spans nodes or is hybrid
        for (const auto& p : plans)
            links = links || p.options.nodes.nodes() > 1 || sharding_name(p.options) != "flat";
        for (std::size_t i = 0; i < plans.size(); ++i)
            print_table_row(plans[i], i == 0, links,
                            links ? busiest_inter_node(model, plans[i].options) : 0);
    }
    DeepSpeedComparison ds;
    if (deepspeed) {
        ds = compare_with_deepspeed(model, o, deepspeed_cluster(f, o), f.rank);
        print_deepspeed_comparison(ds);
    }
    nlohmann::json out;
    if (plans.size() == 1)
        out = plan_json(plans[0]);
    else
        for (const auto& p : plans) out.push_back(plan_json(p));
    if (profile) add_time(plans, *profile, f, out);
    if (!f.json_path.empty()) {
        nlohmann::json file = out;
        if (deepspeed) {
            file["deepspeed"] = deepspeed_json(ds);
            file["deepspeed_model"] = deepspeed_model_json(ds);
        }
        write_json_file(f.json_path, file);
    }
    if (!f.plot.empty()) plot_plans(out, f);
    return 0;
}
} // namespace

CommandRunner add_plan_command(CLI::App& cmd) {
    auto f = std::make_shared<PlanFlags>();
    cmd.add_option("--preset", f->preset, model_preset_names());
    cmd.add_option("--arch", f->arch, "Architecture for explicit fields: " + family_names());
    add_model_field_options(cmd, f->model);
    cmd.add_option("--vocab-multiple", f->vocab_multiple,
                   "GPT-2: the vocabulary padded to a multiple of this in wte and the logits, as "
                   "train stores it (1: no padding)")
        ->check(in_range(1, 65536));
    cmd.add_option("--params", f->params, "A bare parameter count (model states only), e.g. 7.5e9")
        ->check(in_range(1, 1e15));
    cmd.add_option("--ranks,-n", f->ranks, "Data-parallel ranks N")->check(at_least(1));
    cmd.add_option("--nodes", f->nodes, "Nodes (with --gpus-per-node)")->check(at_least(1));
    cmd.add_option("--gpus-per-node", f->gpus_per_node, "GPUs per node")->check(at_least(1));
    cmd.add_option("--ranks-per-node", f->ranks_per_node,
                   "Nodes of K consecutive ranks, for the bytes by link class (--gpus-per-node "
                   "does the same with --nodes)")
        ->check(at_least(1));
    cmd.add_option("--zero", f->zero, "ZeRO stage 0-3");
    cmd.add_option("--shard-group", f->shard_group,
                   "Hybrid sharding (HSDP / MiCS): ZeRO 1-3 inside groups of S consecutive ranks "
                   "(S divides N) or of each node ('node'), replicated across the groups");
    cmd.add_option("--secondary-shard", f->secondary_shard,
                   "ZeRO++ hpZ ('node', ZeRO-3): a node-local secondary shard of the 16-bit "
                   "parameters");
    cmd.add_flag("--offload", f->offload, "Optimizer state and update on the host");
    cmd.add_flag("--reproducible", f->reproducible,
                 "train --reproducible: one sequence a pass, gradients summed in int64 (its "
                 "bytes and memory)");
    cmd.add_option("--precision", f->precision, "fp32 | bf16 | fp16");
    cmd.add_flag("--no-master", f->no_master,
                 "Mixed precision without an fp32 master copy (K = 8)");
    cmd.add_option("--optimizer-states", f->opt_states, "fp32 | bf16 | 8bit (block-wise)");
    cmd.add_option("--checkpoint", f->checkpoint, "none | all | every:K");
    cmd.add_option("--attention", f->attention,
                   "flash (keeps a per-row log-sum-exp) | materialize (keeps the T x T "
                   "probabilities)");
    cmd.add_option("--micro-batch", f->micro_batch, "Micro-batch per rank")->check(at_least(1));
    cmd.add_option("--grad-accum", f->grad_accum, "Micro-batches per step")->check(at_least(1));
    cmd.add_option("--prefetch", f->prefetch, "ZeRO-3: units gathered ahead")->check(at_least(0));
    cmd.add_option("--gpu", f->gpu, "a100-40 | a100-80 | h100-80 | h200-141 | bytes");
    cmd.add_option("--gemm", f->gemm,
                   "openblas | onednn | cublas: whose GEMM workspace to count (openblas's is "
                   "modelled; default openblas, cublas with --gpu)");
    cmd.add_flag("--inference", f->inference, "Weights + KV cache instead of training");
    cmd.add_flag("--compare", f->compare,
                 "Stages 0-3 x offload side by side; on several nodes also HSDP (ZeRO 1-3 in "
                 "each node) and hpZ");
    cmd.add_option("--sweep-ranks", f->sweep,
                   "Comma-separated rank counts, e.g. 1,4,16,64 (rank 0 of each; nodes of "
                   "--ranks-per-node K)");
    cmd.add_option("--rank", f->rank,
                   "Which rank's traffic to show (on one node ranks differ by a few bytes, in the "
                   "scalar collectives; across nodes, in the bytes each sends over the inter-node "
                   "link)");
    cmd.add_option("--estimator", f->estimator,
                   "shardlab | deepspeed (adds DeepSpeed's ZeRO-2/3 estimate beside shardlab's)");
    cmd.add_flag("--time", f->time,
                 "Predict the step's time per rank (needs --profile; docs/TIME.md)");
    cmd.add_option("--profile", f->profile,
                   "Machine profile for --time: a file from `shardlab calibrate --out`, or " +
                       builtin_profile_list(" | ") + " (implies --time)");
    cmd.add_flag("--fit", f->fit,
                 "Search stage x offload x checkpointing x micro-batch x prefetch x shard group "
                 "for what fits --gpu, ranked by --profile's predicted tokens/s");
    cmd.add_option("--global-batch", f->global_batch,
                   "--fit: hold the sequences per step (micro-batch x grad-accum x N) at this; "
                   "without it micro-batches double while they fit")
        ->check(at_least(1));
    cmd.add_option("--top", f->top, "--fit: how many configurations to list (one per kind)")
        ->check(at_least(1));
    cmd.add_option("--json", f->json_path, "Write every number to this JSON file");
    cmd.add_option("--plot", f->plot,
                   "Draw the per-rank memory (device and host, by component) into FILE.png");
    cmd.add_option("--python", f->python, "The interpreter for --plot (one with matplotlib)");
    return [f, &cmd] {
        f->given = command_line_flags(cmd);
        return run_plan(*f);
    };
}

} // namespace shardlab
