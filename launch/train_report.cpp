// Measured vs predicted, per rank.
#include "launch/train_report.h"

#include "launch/cli_util.h"
#include "launch/train_time.h"

#include <fmt/format.h>

#include <algorithm>

namespace shardlab {

namespace {
nlohmann::json memory_json(const MemoryCounts& mem, const MemoryPlan& p) {
    nlohmann::json memory = nlohmann::json::object();
    for (std::size_t c = 0; c < kNumCategories; ++c) {
        const Usage& u = mem.at(Arena::device, Category(c));
        const auto predicted = predicted_device_bytes(p, Category(c));
        const nlohmann::json pred =
            predicted ? nlohmann::json(*predicted) : nlohmann::json(nullptr);
        memory[category_name(Category(c))] = {
            {"peak_bytes", u.peak}, {"current_bytes", u.current}, {"predicted_bytes", pred}};
    }
    memory["device_total"] = {{"peak_bytes", mem.total[int(Arena::device)].peak},
                              {"current_bytes", mem.total[int(Arena::device)].current},
                              {"predicted_bytes", nullptr}};
    const Usage& host = mem.total[int(Arena::host)];
    memory["host"] = {{"peak_bytes", host.peak},
                      {"current_bytes", host.current},
                      {"predicted_bytes", p.host_total}};
    return memory;
}

// Per phase: the device total's peak and each category's, and the host total's peak.
nlohmann::json phases_json(const std::vector<PhaseSnapshot>& phases) {
    nlohmann::json out = nlohmann::json::object();
    for (const PhaseSnapshot& ph : phases) {
        nlohmann::json cats = nlohmann::json::object();
        for (std::size_t c = 0; c < kNumCategories; ++c)
            cats[category_name(Category(c))] = ph.counts.at(Arena::device, Category(c)).peak;
        out[ph.name] = {{"peak_bytes", ph.counts.total[int(Arena::device)].peak},
                        {"host_peak_bytes", ph.counts.total[int(Arena::host)].peak},
                        {"categories", cats}};
    }
    return out;
}

nlohmann::json link_json(const LinkBytes& b) {
    return {{"intra_node", b.intra_node}, {"inter_node", b.inter_node}};
}

nlohmann::json op_json(const OpStats& s, nlohmann::json predicted_bytes,
                       nlohmann::json predicted_calls, nlohmann::json predicted_by_link) {
    return {{"calls", s.calls},
            {"bytes_sent", s.bytes_sent},
            {"predicted_bytes", std::move(predicted_bytes)},
            {"predicted_calls", std::move(predicted_calls)},
            {"bytes_by_link", link_json(s.sent_by_link)},
            {"predicted_bytes_by_link", std::move(predicted_by_link)},
            {"seconds", s.seconds},
            {"busbw_gbps", s.seconds > 0 ? double(s.bytes_sent) / s.seconds / 1e9 : 0.0}};
}

// Each phase's peak RSS beside what explains it; untracked = the peak less the explained (negative
// when pages the allocators reserved were never touched, so never resident).
nlohmann::json resident_json(const ResidentPeaks& r) {
    nlohmann::json out = {{"runtime_baseline_bytes", r.baseline},
                          {"init_peak_bytes", r.init.rss_peak},
                          {"training_peak_bytes", r.training.rss_peak},
                          {"end_peak_bytes", r.end.rss_peak}};
    std::uint64_t peak = 0, explained = 0;
    nlohmann::json phases = nlohmann::json::object();
    for (const auto& [name, p] : {std::pair<const char*, const ResidentPhase&>{"init", r.init},
                                  {"training", r.training},
                                  {"end", r.end}}) {
        const std::uint64_t e = explained_peak_bytes(r, p);
        phases[name] = {{"rss_peak_bytes", p.rss_peak},
                        {"tracked_peak_bytes", p.tracked_peak},
                        {"workspace_peak_bytes", p.workspace_peak},
                        {"reserve_above_tracked_bytes",
                         std::int64_t(p.reserved) - std::int64_t(p.tracked_peak)},
                        {"code_mapped_bytes", code_growth(r, p)},
                        {"host_staging_peak_bytes", p.staging_peak},
                        {"reserve_and_staging_peak_bytes", p.ram_peak},
                        {"explained_peak_bytes", e},
                        {"untracked_bytes", std::int64_t(p.rss_peak) - std::int64_t(e)}};
        if (p.rss_peak >= peak) peak = p.rss_peak, explained = e;
    }
    out["phases"] = phases;
    out["peak_bytes"] = peak; // the run's max RSS, and what explains it (its phase's)
    out["explained_peak_bytes"] = explained;
    out["untracked_bytes"] = std::int64_t(peak) - std::int64_t(explained);
    return out;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
} // namespace

nlohmann::json reproducible_cost_json(const Plan& p) {
    if (!p.reproducible_cost) return nullptr;
    const ReproducibleCost& c = *p.reproducible_cost;
    auto ratio = [](std::uint64_t a, std::uint64_t b) { return b ? double(a) / double(b) : 0.0; };
    return {{"bytes_per_step", p.comm.bytes_per_step},
            {"default_bytes_per_step", c.default_bytes_per_step},
            {"bytes_ratio", ratio(p.comm.bytes_per_step, c.default_bytes_per_step)},
            {"device_total", p.memory.device_total},
            {"default_device_total", c.default_device_total},
            {"memory_ratio", ratio(p.memory.device_total, c.default_device_total)}};
}

namespace {
// What the plan predicts `op` sends in `run` steps of which `applied` applied their update: a
// skipped step sends none of the op's applied-only part (plan/memory_plan.h).
LinkBytes predicted_bytes(const CommPlan& c, const std::string& op, std::uint64_t run,
                          std::uint64_t applied) {
    const auto a = c.applied_only.find(op);
    const LinkBytes only = a == c.applied_only.end() ? LinkBytes{} : a->second;
    const LinkBytes every = c.by_op_link.at(op) - only;
    return {every.intra_node * run + only.intra_node * applied,
            every.inter_node * run + only.inter_node * applied};
}
std::uint64_t predicted_calls(const CommPlan& c, const std::string& op, std::uint64_t run,
                              std::uint64_t applied) {
    const auto a = c.applied_only_calls.find(op);
    const std::uint64_t only = a == c.applied_only_calls.end() ? 0 : a->second;
    return (c.calls.at(op) - only) * run + only * applied;
}
} // namespace

nlohmann::json rank_report(int rank, const RankMeasurements& m, const Plan& plan, int steps_run,
                           int steps_applied) {
    nlohmann::json ops = nlohmann::json::object();
    const std::uint64_t run = std::uint64_t(steps_run), applied = std::uint64_t(steps_applied);
    for (const auto& [op, bytes] : plan.comm.by_op) {
        const LinkBytes l = predicted_bytes(plan.comm, op, run, applied);
        ops[op] = op_json(m.comm.get(op), l.total(), predicted_calls(plan.comm, op, run, applied),
                          link_json(l));
    }
    for (const auto& [op, s] : m.comm.ops()) // anything the plan does not know of, shown too
        if (!ops.contains(op)) ops[op] = op_json(s, nullptr, nullptr, nullptr);
    const std::uint64_t hd_pred = (plan.comm.device_to_host + plan.comm.host_to_device) * applied;
    const RunTiming& t = m.timing;
    nlohmann::json out = {
        {"rank", rank},
        {"device", m.device},
        {"memory", memory_json(m.memory, plan.memory)},
        {"reserved",
         {{"device_peak_bytes", m.reserved.device}, {"host_peak_bytes", m.reserved.host}}},
        {"phases", phases_json(m.phases)},
        {"comm", ops},
        {"host_device_bytes",
         {{"device_to_host", m.traffic.device_to_host},
          {"host_to_device", m.traffic.host_to_device},
          {"total", m.traffic.device_to_host + m.traffic.host_to_device},
          {"predicted", hd_pred}}},
        {"time",
         {{"steps", t.steps_s.size()},
          {"step_seconds", t.step_seconds()},
          {"exposed_comm_seconds", t.exposed_comm_seconds()},
          {"compute_seconds", t.step_seconds() - t.exposed_comm_seconds()},
          {"median_step_ms", median(t.steps_s) * 1e3},
          {"median_exposed_comm_ms", median(t.exposed_s) * 1e3}}},
        {"skipped_steps", m.skipped_steps},
        {"resident", resident_json(m.resident)}};
    if (plan.reproducible_cost) out["reproducible_cost"] = reproducible_cost_json(plan);
    if (m.driver) {
        const DriverMemory& d = *m.driver;
        out["gpu_driver"] = {
            {"in_use_bytes", d.in_use},
            {"allocator_reserved_bytes", d.reserved},
            {"untracked_bytes", d.in_use > d.reserved ? d.in_use - d.reserved : 0}};
    }
    return out;
}

std::vector<nlohmann::json> gather_reports(const nlohmann::json& mine, WatchedComm& comm) {
    std::vector<nlohmann::json> out;
    for (const auto& text : comm.gather(mine.dump(), 0, "the end-of-run report"))
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
// An op's bytes per link class under its row, each beside the model's and marked like the total.
void print_link_rows(const nlohmann::json& s) {
    for (const char* link : {"intra_node", "inter_node"}) {
        const nlohmann::json& p = s["predicted_bytes_by_link"];
        const nlohmann::json pred = p.is_null() ? nlohmann::json(nullptr) : p[link];
        fmt::print("    {:<22} {:>7} {:>14} {:>14} {:>9} {:>11} {}\n", link, "",
                   s["bytes_by_link"][link].get<std::uint64_t>(), text_or_dash(pred), "", "",
                   mark(s["bytes_by_link"][link], pred));
    }
}

// Max RSS per phase, split so that the columns add up: max RSS = the runtime baseline (measured
// before the model is built) + code paged in since + the peak of the allocators' reserve and
// declared host staging at one moment + untracked (what nothing explains; negative when reserved
// pages were never touched). Then what sizes the reserve: tracked (its peak) and the reserve above
// it (at the phase's end).
void print_resident(const nlohmann::json& r) {
    const auto& res = r["resident"];
    fmt::print("rank {} resident (bytes)  {:>12} {:>12} {:>12} {:>15} {:>12} | {:>12} {:>13}\n",
               r["rank"].get<int>(), "max RSS", "= baseline", "+ code", "+ reserve/stage",
               "+ untracked", "tracked", "reserve above");
    const std::uint64_t baseline = res["runtime_baseline_bytes"].get<std::uint64_t>();
    for (const char* ph : {"init", "training", "end"}) {
        const auto& p = res["phases"][ph];
        fmt::print("  {:<23} {:>12} {:>12} {:>12} {:>15} {:>12} | {:>12} {:>13}\n", ph,
                   p["rss_peak_bytes"].get<std::uint64_t>(), baseline,
                   p["code_mapped_bytes"].get<std::uint64_t>(),
                   p["reserve_and_staging_peak_bytes"].get<std::uint64_t>(),
                   p["untracked_bytes"].get<std::int64_t>(),
                   p["tracked_peak_bytes"].get<std::uint64_t>(),
                   p["reserve_above_tracked_bytes"].get<std::int64_t>());
    }
}
} // namespace

void print_rank_report(const nlohmann::json& r, bool by_link) {
    const int rank = r["rank"].get<int>();
    if (r.contains("device"))
        fmt::print("\nrank {} device: {}", rank, r["device"].get<std::string>());
    fmt::print("\nrank {} memory (bytes)     {:>14} {:>14} {:>14}\n", rank, "peak", "current",
               "predicted");
    for (const char* c : {"params", "grads", "master", "optimizer", "activations", "comm_buffers",
                          "workspace", "device_total", "host"}) {
        const auto& m = r["memory"][c];
        fmt::print("  {:<24} {:>14} {:>14} {:>14} {}\n", c, m["peak_bytes"].get<std::uint64_t>(),
                   m["current_bytes"].get<std::uint64_t>(), text_or_dash(m["predicted_bytes"]),
                   mark(m["peak_bytes"], m["predicted_bytes"]));
    }
    fmt::print("  {:<24} {:>14} (device; host {}) reserved by the caching allocators\n", "reserved",
               r["reserved"]["device_peak_bytes"].get<std::uint64_t>(),
               r["reserved"]["host_peak_bytes"].get<std::uint64_t>());
    if (r.contains("gpu_driver")) {
        const auto& d = r["gpu_driver"];
        fmt::print("  {:<24} {:>14} in use on the GPU (cudaMemGetInfo) = {} reserved + {} the "
                   "tracker cannot see (CUDA context, cuBLAS, NCCL, other processes)\n",
                   "gpu driver", d["in_use_bytes"].get<std::uint64_t>(),
                   d["allocator_reserved_bytes"].get<std::uint64_t>(),
                   d["untracked_bytes"].get<std::uint64_t>());
    }
    if (r.contains("resident") && r["resident"].contains("phases")) print_resident(r);
    fmt::print("rank {} peak per phase     {:>14} {:>14}\n", rank, "device", "host");
    std::vector<std::string> order = {"init", "forward", "backward", "step", "validation"};
    for (const auto& [name, ph] : r["phases"].items())
        if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
    for (const std::string& name : order) {
        if (!r["phases"].contains(name)) continue;
        const auto& ph = r["phases"][name];
        fmt::print("  {:<24} {:>14} {:>14}\n", name, ph["peak_bytes"].get<std::uint64_t>(),
                   ph["host_peak_bytes"].get<std::uint64_t>());
    }
    fmt::print("rank {} communication     {:>7} {:>14} {:>14} {:>9} {:>11}\n", rank, "calls",
               "bytes sent", "predicted", "seconds", "busbw GB/s");
    for (const auto& [op, s] : r["comm"].items()) {
        fmt::print("  {:<24} {:>7} {:>14} {:>14} {:>9.3f} {:>11.2f} {}\n", op,
                   s["calls"].get<std::uint64_t>(), s["bytes_sent"].get<std::uint64_t>(),
                   text_or_dash(s["predicted_bytes"]), s["seconds"].get<double>(),
                   s["busbw_gbps"].get<double>(), mark(s["bytes_sent"], s["predicted_bytes"]));
        if (by_link) print_link_rows(s);
    }
    const auto& hd = r["host_device_bytes"];
    if (hd["total"].get<std::uint64_t>() || hd["predicted"].get<std::uint64_t>())
        fmt::print("  {:<24} {:>7} {:>14} {:>14}           device->host {} + host->device {} {}\n",
                   "offload copies", "", hd["total"].get<std::uint64_t>(),
                   hd["predicted"].get<std::uint64_t>(), hd["device_to_host"].get<std::uint64_t>(),
                   hd["host_to_device"].get<std::uint64_t>(), mark(hd["total"], hd["predicted"]));
    const auto& t = r["time"];
    const double step_s = t["step_seconds"].get<double>(),
                 exposed = t["exposed_comm_seconds"].get<double>();
    fmt::print("rank {} time: {} steps in {:.3f} s = compute {:.3f} s + exposed communication "
               "{:.3f} s ({:.1f}%); median step {:.1f} ms, of it exposed {:.1f} ms\n",
               rank, t["steps"].get<std::size_t>(), step_s, step_s - exposed, exposed,
               step_s > 0 ? 100.0 * exposed / step_s : 0.0, t["median_step_ms"].get<double>(),
               t["median_exposed_comm_ms"].get<double>());
    print_time_comparison(r); // train --profile (launch/train_time.h)
    if (r.contains("reproducible_cost")) {
        const auto& c = r["reproducible_cost"];
        fmt::print("rank {} --reproducible: {:.2f}x the bytes per step and {:.2f}x the device "
                   "memory of the same run without it (plan: {} vs {} B sent, {} vs {} B held)\n",
                   rank, c["bytes_ratio"].get<double>(), c["memory_ratio"].get<double>(),
                   c["bytes_per_step"].get<std::uint64_t>(),
                   c["default_bytes_per_step"].get<std::uint64_t>(),
                   c["device_total"].get<std::uint64_t>(),
                   c["default_device_total"].get<std::uint64_t>());
    }
    if (r["skipped_steps"].get<long>() > 0)
        fmt::print("rank {}: {} step(s) skipped (non-finite gradient norm)\n", rank,
                   r["skipped_steps"].get<long>());
}

nlohmann::json memory_sample(const MemoryTracker& tracker, WatchedComm& comm) {
    nlohmann::json mine{{"rss", current_resident_bytes()}, {"tracked", nlohmann::json::object()}};
    for (std::size_t c = 0; c < kNumCategories; ++c)
        mine["tracked"][category_name(Category(c))] =
            tracker.current(Category(c), Arena::device) + tracker.current(Category(c), Arena::host);
    const auto all = comm.gather(mine.dump(), 0, "--log-memory: every rank's memory to rank 0");
    if (all.empty()) return nullptr;
    nlohmann::json out{{"tracked", nlohmann::json::array()}, {"rss", nlohmann::json::array()}};
    for (const std::string& text : all) {
        const nlohmann::json r = nlohmann::json::parse(text);
        out["tracked"].push_back(r["tracked"]);
        out["rss"].push_back(r["rss"]);
    }
    return out;
}

} // namespace shardlab
