// The time model's prediction as JSON (plan --json, report.json's ranks[i].time.predicted) and as
// the table `plan --time` prints. Seconds in the JSON keep their unit in the key.
#include "plan/time_model.h"

#include <fmt/format.h>

namespace shardlab {

namespace {
nlohmann::json by_link_ms(const CollectiveTime& c) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [cls, s] : c.seconds_by_link) j[cls] = s * 1e3;
    return j;
}
} // namespace

nlohmann::json time_json(const TimePrediction& t) {
    nlohmann::json coll = nlohmann::json::array();
    for (const CollectiveTime& c : t.collectives)
        coll.push_back({{"op", c.op},
                        {"calls", c.calls},
                        {"bytes", c.bytes.total()},
                        {"bytes_by_link",
                         {{"intra_node", c.bytes.intra_node}, {"inter_node", c.bytes.inter_node}}},
                        {"link", c.link},
                        {"ms_by_link", by_link_ms(c)},
                        {"ms", c.seconds * 1e3}});
    nlohmann::json exposed = nlohmann::json::object();
    for (const auto& [k, s] : t.exposed_by_op) exposed[k] = s * 1e3;
    return {
        {"predicted_step_ms", t.step_s * 1e3}, {"compute_ms", t.compute_s * 1e3},
        {"forward_ms", t.forward_s * 1e3},     {"backward_ms", t.backward_s * 1e3},
        {"recompute_ms", t.recompute_s * 1e3}, {"gemm_ms", t.gemm_s * 1e3},
        {"attention_ms", t.attention_s * 1e3}, {"memory_bound_ms", t.memory_bound_s * 1e3},
        {"optimizer_ms", t.optimizer_s * 1e3}, {"exposed_comm_ms", t.exposed_comm_s * 1e3},
        {"exposed_comm_by_op_ms", exposed},    {"comm_ms", t.comm_s * 1e3},
        {"copies_ms", t.copies_s * 1e3},       {"host_update_ms", t.host_update_s * 1e3},
        {"offload_ms", t.offload_s * 1e3},     {"collectives", coll},
        {"tokens_per_s", t.tokens_per_s},      {"tokens_per_s_per_rank", t.tokens_per_s_per_rank},
        {"critical_path", t.critical_path}};
}

std::string describe_time(const TimePrediction& t) {
    auto row = [&](const char* what, double s, const char* note = "") {
        return fmt::format("  {:<34} {:>10.3f} ms {:>5.1f}%  {}\n", what, s * 1e3,
                           t.step_s > 0 ? 100.0 * s / t.step_s : 0.0, note);
    };
    std::string out = "time per step (rank's view; docs/TIME.md):\n";
    out += row("forward", t.forward_s);
    out += row("backward", t.backward_s);
    out += row("recompute", t.recompute_s);
    out += row("device AdamW", t.optimizer_s);
    out += row("exposed communication", t.exposed_comm_s);
    out += row("offload pipeline", t.offload_s, "(copies and host AdamW, overlapped)");
    out += fmt::format("  {:<34} {:>10.3f} ms\n", "= predicted step", t.step_s * 1e3);
    out +=
        fmt::format("  compute by kind: GEMM {:.3f} ms, attention {:.3f} ms, memory-bound {:.3f} "
                    "ms\n",
                    t.gemm_s * 1e3, t.attention_s * 1e3, t.memory_bound_s * 1e3);
    if (t.offload_s > 0)
        out += fmt::format("  offload alone: copies {:.3f} ms, host AdamW {:.3f} ms\n",
                           t.copies_s * 1e3, t.host_update_s * 1e3);
    if (!t.collectives.empty()) {
        out += fmt::format("  {:<24} {:>6} {:>14} {:>11} {:>12} {:>12}\n", "collective", "calls",
                           "bytes", "link", "alone ms", "exposed ms");
        for (const CollectiveTime& c : t.collectives) {
            const auto e = t.exposed_by_op.find(c.op);
            out += fmt::format("  {:<24} {:>6} {:>14} {:>11} {:>12.3f} {:>12.3f}\n", c.op, c.calls,
                               c.bytes.total(), c.link, c.seconds * 1e3,
                               e == t.exposed_by_op.end() ? 0.0 : e->second * 1e3);
        }
    }
    out += fmt::format("  tokens/s: {:.1f} (all ranks), {:.1f} per rank\n", t.tokens_per_s,
                       t.tokens_per_s_per_rank);
    out += "  critical path: " + t.critical_path + "\n";
    return out;
}

} // namespace shardlab
