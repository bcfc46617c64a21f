// plan --fit's output: a block per ranked configuration, then the JSON beside it.
#include "launch/plan_fit.h"

#include "launch/plan_json.h"
#include "model/attention_kind.h"
#include "model/precision.h"

#include <fmt/format.h>

#include <cstdio>

namespace shardlab {

namespace {

double gigabytes(std::uint64_t b) {
    return double(b) / 1e9;
}

LinkBytes link_total(const CommPlan& c) {
    LinkBytes t;
    for (const auto& [op, l] : c.by_op_link)
        t.intra_node += l.intra_node, t.inter_node += l.inter_node;
    return t;
}

void print_candidate(int i, const FitCandidate& c, const FitRequest& q, const FitCommandLine& cmd) {
    const MemoryPlan& m = c.plan.memory;
    const TimePrediction& t = c.time;
    const LinkBytes l = link_total(c.plan.comm);
    fmt::print("#{}  {}\n", i, describe_options(c.plan.options));
    fmt::print("    predicted {:.1f} ms a step, {:.0f} tokens/s (all ranks); critical path: {}\n",
               t.step_s * 1e3, t.tokens_per_s, t.critical_path);
    fmt::print("    compute {:.1f} ms (recompute {:.1f}), exposed communication {:.1f} ms, offload "
               "{:.1f} ms\n",
               t.compute_s * 1e3, t.recompute_s * 1e3, t.exposed_comm_s * 1e3, t.offload_s * 1e3);
    fmt::print(
        "    device {:.3f} GB of {:.3f} GB ({:.0f}%), activations {:.3f} GB; host {:.3f} GB\n",
        gigabytes(m.device_total), gigabytes(q.budget_bytes),
        100.0 * double(m.device_total) / double(q.budget_bytes), gigabytes(m.activations),
        gigabytes(m.host_total));
    fmt::print("    sends {:.3f} GB a step: intra-node {:.3f} GB, inter-node {:.3f} GB\n",
               gigabytes(c.plan.comm.bytes_per_step), gigabytes(l.intra_node),
               gigabytes(l.inter_node));
    fmt::print("    {}\n", train_command(c.plan.options, cmd));
    for (const FitCandidate& t : c.ties)
        fmt::print("    tied (within {:.0f}%): {}, {:.1f} ms, device {:.3f} GB\n", 100 * kFitTie,
                   describe_options(t.plan.options), t.time.step_s * 1e3,
                   gigabytes(t.plan.memory.device_total));
}

// Nothing fits: the least memory searched, and what would change that. Returns ranks_to_fit's
// answer.
int print_no_fit(const FitResult& r, const FitRequest& q, const PlanModel& model,
                 const PlanOptions& base) {
    const Plan& s = *r.smallest;
    std::string msg = fmt::format(
        "nothing fits in {} B ({:.3f} GB) a rank: of {} configurations searched, the smallest, {}, "
        "needs {} B ({:.3f} GB: activations {:.3f} GB, model states and buffers {:.3f} GB).",
        q.budget_bytes, gigabytes(q.budget_bytes), r.searched, describe_options(s.options),
        s.memory.device_total, gigabytes(s.memory.device_total), gigabytes(s.memory.activations),
        gigabytes(s.memory.device_total - s.memory.activations));
    Plan widest;
    const int n = ranks_to_fit(model, base, q.budget_bytes, &widest);
    if (n > 0)
        msg += fmt::format(" Give a budget of at least that, or run on {} ranks or more (ZeRO-3 + "
                           "offload, checkpoint all, micro-batch 1 fits there).",
                           n);
    else
        msg += fmt::format(
            " More ranks do not help: what does not shrink with them needs {:.3f} GB even at {} "
            "ranks (one sequence's activations {:.3f} GB; the units gathered and reduced a few at "
            "a time, and the comm buffers, {:.3f} GB); give a shorter --seq or a larger budget.",
            gigabytes(widest.memory.device_total), widest.options.ranks,
            gigabytes(widest.memory.activations),
            gigabytes(widest.memory.device_total - widest.memory.activations));
    std::fprintf(stderr, "%s\n", msg.c_str());
    return n;
}

} // namespace

std::string train_command(const PlanOptions& o, const FitCommandLine& cmd) {
    std::string s = fmt::format("mpirun -np {} shardlab train{}{} --precision {} --zero {}",
                                o.ranks, cmd.model_flags, cmd.layout_flags,
                                dtype_name(param_dtype(o.precision)), o.zero);
    if (o.offload) s += " --offload";
    s += fmt::format(" --micro-batch {} --grad-accum {}", o.micro_batch, o.grad_accum);
    if (o.checkpoint.every == 1) s += " --checkpoint all";
    if (o.checkpoint.every > 1) s += fmt::format(" --checkpoint every:{}", o.checkpoint.every);
    if (o.prefetch > 0) s += fmt::format(" --prefetch {}", o.prefetch);
    if (o.shard_group > 0 && o.shard_group != o.ranks)
        s += fmt::format(" --shard-group {}", o.shard_group);
    if (o.secondary_shard > 0) s += " --secondary-shard node";
    if (o.attention != AttentionKind::flash)
        s += fmt::format(" --attention {}", attention_name(o.attention));
    if (o.reproducible) s += " --reproducible";
    return s;
}

int print_fit(const FitResult& r, const FitRequest& q, const PlanModel& model,
              const PlanOptions& base, const FitCommandLine& cmd, nlohmann::json& out) {
    out = {{"budget_bytes", q.budget_bytes},
           {"global_batch", q.global_batch},
           {"searched", r.searched},
           {"fitting", r.fitting},
           {"ranked", nlohmann::json::array()}};
    if (r.smallest) out["smallest"] = plan_json(*r.smallest);
    if (r.ranked.empty()) {
        out["ranks_to_fit"] = print_no_fit(r, q, model, base);
        return 1;
    }
    fmt::print(
        "{}: {} of {} configurations fit {:.3f} GB a rank on {} ranks{}; the fastest of each "
        "kind, by predicted tokens/s:\n\n",
        model.name, r.fitting, r.searched, gigabytes(q.budget_bytes), base.ranks,
        q.global_batch ? fmt::format(" at a global batch of {}", q.global_batch) : "");
    for (std::size_t i = 0; i < r.ranked.size(); ++i) {
        print_candidate(int(i) + 1, r.ranked[i], q, cmd);
        nlohmann::json j = plan_json(r.ranked[i].plan);
        j["time"] = time_json(r.ranked[i].time);
        j["describe"] = describe_options(r.ranked[i].plan.options);
        j["train_command"] = train_command(r.ranked[i].plan.options, cmd);
        j["ties"] = nlohmann::json::array();
        for (const FitCandidate& t : r.ranked[i].ties)
            j["ties"].push_back({{"describe", describe_options(t.plan.options)},
                                 {"predicted_step_ms", t.time.step_s * 1e3},
                                 {"device_total", t.plan.memory.device_total},
                                 {"train_command", train_command(t.plan.options, cmd)}});
        out["ranked"].push_back(j);
    }
    return 0;
}

} // namespace shardlab
