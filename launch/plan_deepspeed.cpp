// DeepSpeed's estimate beside shardlab's plan (docs/MEMORY.md, "DeepSpeed's estimator, side by
// side").
#include "launch/plan_deepspeed.h"

#include "optim/unit_shards.h"

#include <fmt/format.h>

namespace shardlab {

namespace {
// Where the formulas were read: microsoft/DeepSpeed at this commit.
constexpr const char* kDeepSpeedCommit = "38327e07f6cd39b63418f60cedd1651b0be3e7c3";

int side_index(int stage, bool offload) {
    return (stage == 3 ? 2 : 0) + (offload ? 1 : 0);
}

ShardlabSide shardlab_side(const PlanModel& model, const PlanOptions& base, int stage, bool offload,
                           int rank) {
    PlanOptions o = base;
    o.zero = stage;
    o.offload = offload;
    o.prefetch = stage == 3 ? base.prefetch : 0;
    ShardlabSide s{make_plan(model, o, rank), 0, 0, 0};
    const MemoryPlan& m = s.plan.memory;
    std::uint64_t owned = 0; // the owned gradient shard (stages 2 and 3)
    for (auto n : model.unit_numel) owned += padded_numel(n, o.ranks) / std::uint64_t(o.ranks);
    s.gradient_transient = m.grads - owned * param_bytes_per_element(o.precision);
    s.device_states = m.params + m.grads - s.gradient_transient + m.master + m.optimizer;
    s.host_states = m.host_master + m.host_optimizer + m.host_grads;
    return s;
}

std::string device_name(bool cpu) {
    return cpu ? "cpu" : "none";
}

// DeepSpeed's Options column. It formats the enum member OffloadDeviceEnum.cpu with width 4;
// Python up to 3.10 prints its value, "cpu " (3.11 and later print "OffloadDeviceEnum.cpu").
std::string options_text(const DeepSpeedRow& r) {
    const auto dev = [](bool cpu) { return std::string(cpu ? "cpu " : "none"); };
    if (r.stage == 2) return "offload_optimizer=" + dev(r.offload_optimizer);
    return fmt::format("offload_param={}, offload_optimizer={}, zero_init={}", dev(r.offload_param),
                       dev(r.offload_optimizer), r.zero_init ? 1 : 0);
}

// One of DeepSpeed's printouts, as estimate_zero{2,3}_model_states_mem_needs_all_cold prints it.
void print_deepspeed_block(const DeepSpeedComparison& c, int stage) {
    const DeepSpeedCluster& k = c.cluster;
    fmt::print("Estimated memory needed for params, optim states and gradients for a:\n"
               "HW: Setup with {} {}, {} {} per node.\n",
               k.nodes, k.nodes > 1 ? "nodes" : "node", k.gpus_per_node,
               k.gpus_per_node > 1 ? "GPUs" : "GPU");
    const auto millions = [](std::uint64_t n) { return std::uint64_t(double(n) / 1e6); };
    if (stage == 2)
        fmt::print("SW: Model with {}M total params.\n", millions(c.counts.total_params));
    else
        fmt::print("SW: Model with {}M total params, {}M largest layer params.\n",
                   millions(c.counts.total_params), millions(c.counts.largest_layer_params));
    fmt::print("  per CPU  |  per GPU |   Options\n");
    const double gib = double(1ull << 30);
    for (const auto& r : c.rows)
        if (r.stage == stage)
            fmt::print(" {:7.2f}GB | {:6.2f}GB | {}\n", double(r.cpu_bytes) / gib,
                       double(r.gpu_bytes) / gib, options_text(r));
}

void print_side_by_side(const DeepSpeedComparison& c) {
    const int gpn = c.cluster.gpus_per_node;
    fmt::print("\nSide by side, bytes. GPU: per GPU (rank). CPU: per node, DeepSpeed's \"per CPU\" "
               "(shardlab: host per rank x {} per node).\nshardlab's states: params, owned "
               "gradient shard, master, m and v; its total adds the lines of the next table.\n",
               gpn);
    const auto row = [](auto... cells) {
        fmt::print("{:>5} {:>9} {:>6} {:>9} {:>14} {:>14} {:>14} {:>15} {:>15}\n", cells...);
    };
    row("", "optimizer", "param", "", "DeepSpeed", "shardlab", "shardlab", "DeepSpeed", "shardlab");
    row("stage", "offload", "offld", "zero_init", "GPU", "GPU states", "GPU total", "CPU", "CPU");
    bool param_rows = false;
    for (const auto& r : c.rows) {
        const ShardlabSide& s = c.side(r);
        const MemoryPlan& m = s.plan.memory;
        param_rows = param_rows || r.offload_param;
        // The marker says, on the row, that shardlab's figures there keep the parameters.
        row(r.stage, device_name(r.offload_optimizer),
            device_name(r.offload_param) + (r.offload_param ? "*" : ""),
            r.stage == 2 ? "-" : (r.zero_init ? "1" : "0"), r.gpu_bytes, s.device_states,
            m.device_total, r.cpu_bytes, m.host_total * std::uint64_t(gpn));
    }
    if (param_rows)
        fmt::print("* shardlab has no parameter offload: on these rows its figures are ZeRO-3 with "
                   "optimizer offload, parameters on the GPU.\n");
}

void print_left_out(const DeepSpeedComparison& c) {
    const auto& s = c.sides;
    const PlanOptions& o = s[0].plan.options;
    const PlanModel& model = s[0].plan.model;
    fmt::print("\nNot in DeepSpeed's figures (shardlab's plan, bytes per rank):\n");
    if (model.arch() == Architecture::params_only) {
        fmt::print(
            "  nothing: a bare parameter count has no shape, so shardlab counts model states "
            "only, and DeepSpeed's\n  largest layer is taken as 0 (no 4 B x largest layer "
            "in its ZeRO-3 GPU figures).\n");
        return;
    }
    const auto row = [](const std::string& what, auto... cells) {
        fmt::print("  {:<50} {:>14} {:>14} {:>14} {:>14}\n", what, cells...);
    };
    row("", "ZeRO-2", "ZeRO-2 offload", "ZeRO-3", "ZeRO-3 offload");
    const auto line = [&](const std::string& what, auto bytes) {
        row(what, bytes(s[0]), bytes(s[1]), bytes(s[2]), bytes(s[3]));
    };
    line("full unit gradients until their reduce-scatter",
         [](const ShardlabSide& x) { return x.gradient_transient; });
    line(fmt::format("activations (micro-batch {} x {})", o.micro_batch,
                     o.seq ? o.seq : model.config.context),
         [](const ShardlabSide& x) { return x.plan.memory.activations; });
    line(fmt::format("gathered units (ZeRO-3, prefetch {}) + comm scratch",
                     s[2].plan.options.prefetch), // the ZeRO-2 plans have none
         [](const ShardlabSide& x) { return x.plan.memory.buffers; });
    line("host: offload staging tiles",
         [](const ShardlabSide& x) { return x.plan.memory.host_staging; });
}
} // namespace

const ShardlabSide& DeepSpeedComparison::side(const DeepSpeedRow& r) const {
    return sides.at(std::size_t(side_index(r.stage, r.offload_optimizer)));
}

DeepSpeedComparison compare_with_deepspeed(const PlanModel& model, const PlanOptions& base,
                                           DeepSpeedCluster cluster, int rank) {
    DeepSpeedComparison c;
    c.counts = deepspeed_model_counts(model);
    c.cluster = cluster;
    c.rows = deepspeed_rows(c.counts, cluster);
    for (int stage : {2, 3})
        for (bool offload : {false, true})
            c.sides.push_back(shardlab_side(model, base, stage, offload, rank));
    return c;
}

void print_deepspeed_comparison(const DeepSpeedComparison& c) {
    fmt::print("\nDeepSpeed's estimate (estimate_zero2/3_model_states_mem_needs_all_live, "
               "microsoft/DeepSpeed@{:.10}) for the\nHugging Face model of this shape: "
               "total_params {}, largest layer {} with {} params.\nModel states only (16-bit "
               "params and grads, fp32 master, Adam m and v), whatever this plan's precision.\n\n",
               kDeepSpeedCommit, c.counts.total_params, c.counts.largest_layer,
               c.counts.largest_layer_params);
    print_deepspeed_block(c, 2);
    fmt::print("\n");
    print_deepspeed_block(c, 3);
    print_side_by_side(c);
    print_left_out(c);
    fmt::print("DeepSpeed counts what shardlab does not hold: without offload an fp32 gradient "
               "shard (4 B/param / N),\n4 B x the largest layer (ZeRO-3), a factor 1.5 on the "
               "host, and with zero_init=0 a full fp32 model\nper process. Neither counts "
               "DeepSpeed's own buckets (reduce, all-gather, prefetch). docs/MEMORY.md, section "
               "10.\n");
}

nlohmann::json deepspeed_json(const DeepSpeedComparison& c) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : c.rows) {
        const ShardlabSide& s = c.side(r);
        const MemoryPlan& m = s.plan.memory;
        rows.push_back(
            {{"stage", r.stage},
             {"offload_optimizer", device_name(r.offload_optimizer)},
             {"offload_param", device_name(r.offload_param)},
             {"zero_init", r.zero_init},
             {"gpu_bytes", r.gpu_bytes},
             {"cpu_bytes", r.cpu_bytes},
             {"shardlab",
              {{"zero", s.plan.options.zero},
               {"offload", s.plan.options.offload},
               {"param_offload", false},
               {"device_states", s.device_states},
               {"gradient_transient", s.gradient_transient},
               {"activations", m.activations},
               {"buffers", m.buffers},
               {"device_total", m.device_total},
               {"host_states", s.host_states},
               {"host_staging", m.host_staging},
               {"host_total", m.host_total},
               {"host_total_per_node", m.host_total * std::uint64_t(c.cluster.gpus_per_node)}}}});
    }
    return rows;
}

nlohmann::json deepspeed_model_json(const DeepSpeedComparison& c) {
    return {{"total_params", c.counts.total_params},
            {"largest_layer_params", c.counts.largest_layer_params},
            {"largest_layer", c.counts.largest_layer},
            {"num_nodes", c.cluster.nodes},
            {"num_gpus_per_node", c.cluster.gpus_per_node},
            {"additional_buffer_factor", deepspeed_buffer_factor},
            {"source", std::string("microsoft/DeepSpeed@") + kDeepSpeedCommit}};
}

} // namespace shardlab
