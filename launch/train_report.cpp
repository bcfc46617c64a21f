// Measured vs predicted, per rank.
#include "launch/train_report.h"

#include "launch/cli_util.h"

#include <fmt/format.h>

namespace shardlab {

nlohmann::json rank_report(int rank, const MemoryCounts& mem, const CommStats& comm,
                           const Plan& plan, int steps_run, HostDeviceTraffic traffic) {
    const MemoryPlan& p = plan.memory;
    const std::uint64_t predicted[] = {p.params,      p.grads,   p.master, p.optimizer,
                                       p.activations, p.buffers, 0};
    nlohmann::json memory = nlohmann::json::object();
    for (std::size_t c = 0; c < kNumCategories; ++c) {
        const Usage& u = mem.at(Arena::device, Category(c));
        nlohmann::json pred = Category(c) == Category::workspace ? nlohmann::json(nullptr)
                                                                 : nlohmann::json(predicted[c]);
        memory[category_name(Category(c))] = {
            {"peak_bytes", u.peak}, {"current_bytes", u.current}, {"predicted_bytes", pred}};
    }
    const Usage& host = mem.total[int(Arena::host)];
    memory["host"] = {{"peak_bytes", host.peak},
                      {"current_bytes", host.current},
                      {"predicted_bytes", p.host_total}};

    nlohmann::json ops = nlohmann::json::object();
    for (const auto& [op, bytes] : plan.comm.by_op) {
        const OpStats s = comm.get(op);
        ops[op] = {{"calls", s.calls},
                   {"bytes_sent", s.bytes_sent},
                   {"predicted_bytes", bytes * std::uint64_t(steps_run)},
                   {"predicted_calls", plan.comm.calls.at(op) * std::uint64_t(steps_run)},
                   {"seconds", s.seconds},
                   {"busbw_gbps", s.seconds > 0 ? double(s.bytes_sent) / s.seconds / 1e9 : 0.0}};
    }
    for (const auto& [op, s] :
         comm.ops()) // anything the plan does not know about, shown all the same
        if (!ops.contains(op))
            ops[op] = {
                {"calls", s.calls},
                {"bytes_sent", s.bytes_sent},
                {"predicted_bytes", nullptr},
                {"predicted_calls", nullptr},
                {"seconds", s.seconds},
                {"busbw_gbps", s.seconds > 0 ? double(s.bytes_sent) / s.seconds / 1e9 : 0.0}};
    const std::uint64_t hd_pred =
        (plan.comm.device_to_host + plan.comm.host_to_device) * std::uint64_t(steps_run);
    return {{"rank", rank},
            {"memory", memory},
            {"comm", ops},
            {"host_device_bytes",
             {{"device_to_host", traffic.device_to_host},
              {"host_to_device", traffic.host_to_device},
              {"total", traffic.device_to_host + traffic.host_to_device},
              {"predicted", hd_pred}}}};
}

std::vector<nlohmann::json> gather_reports(const nlohmann::json& mine, MPI_Comm comm) {
    std::vector<nlohmann::json> out;
    for (const auto& text : gather_to_root(mine.dump(), comm))
        out.push_back(nlohmann::json::parse(text));
    return out;
}

namespace {
std::string mark(const nlohmann::json& measured, const nlohmann::json& predicted) {
    if (predicted.is_null()) return "";
    return measured == predicted ? "=" : "≠";
}
std::string text_or_dash(const nlohmann::json& v) {
    return v.is_null() ? "—" : v.dump();
}
} // namespace

void print_rank_report(const nlohmann::json& r) {
    fmt::print("\nrank {} memory (bytes)     {:>14} {:>14} {:>14}\n", r["rank"].get<int>(), "peak",
               "current", "predicted");
    for (const char* c : {"params", "grads", "master", "optimizer", "activations", "comm_buffers",
                          "workspace", "host"}) {
        const auto& m = r["memory"][c];
        fmt::print("  {:<24} {:>14} {:>14} {:>14} {}\n", c, m["peak_bytes"].get<std::uint64_t>(),
                   m["current_bytes"].get<std::uint64_t>(), text_or_dash(m["predicted_bytes"]),
                   mark(m["peak_bytes"], m["predicted_bytes"]));
    }
    fmt::print("rank {} communication     {:>7} {:>14} {:>14} {:>9} {:>11}\n", r["rank"].get<int>(),
               "calls", "bytes sent", "predicted", "seconds", "busbw GB/s");
    for (const auto& [op, s] : r["comm"].items())
        fmt::print("  {:<24} {:>7} {:>14} {:>14} {:>9.3f} {:>11.2f} {}\n", op,
                   s["calls"].get<std::uint64_t>(), s["bytes_sent"].get<std::uint64_t>(),
                   text_or_dash(s["predicted_bytes"]), s["seconds"].get<double>(),
                   s["busbw_gbps"].get<double>(), mark(s["bytes_sent"], s["predicted_bytes"]));
    const auto& hd = r["host_device_bytes"];
    if (hd["total"].get<std::uint64_t>() || hd["predicted"].get<std::uint64_t>())
        fmt::print("  {:<24} {:>7} {:>14} {:>14}           device->host {} + host->device {}\n",
                   "offload copies", "", hd["total"].get<std::uint64_t>(),
                   hd["predicted"].get<std::uint64_t>(), hd["device_to_host"].get<std::uint64_t>(),
                   hd["host_to_device"].get<std::uint64_t>());
}

} // namespace shardlab
