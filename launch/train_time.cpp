// Prediction beside measurement in a rank's report: the components both sides have (the step,
// compute, exposed communication), each with its error, and the one that missed most by
// milliseconds — the term of docs/TIME.md to look at first.
#include "launch/train_time.h"

#include <fmt/format.h>

#include <cmath>

namespace shardlab {

void add_time_prediction(nlohmann::json& r, const TimePrediction& t, const std::string& profile) {
    nlohmann::json& time = r["time"];
    const double step = time["median_step_ms"].get<double>(),
                 exposed = time["median_exposed_comm_ms"].get<double>();
    time["predicted_step_ms"] = t.step_s * 1e3;
    time["predicted"] = time_json(t);
    time["profile"] = profile;
    auto one = [](double measured, double predicted) {
        return nlohmann::json{{"measured_ms", measured},
                              {"predicted_ms", predicted},
                              {"error", measured > 0 ? (predicted - measured) / measured : 0.0}};
    };
    nlohmann::json vs = {
        {"step", one(step, t.step_s * 1e3)},
        {"compute", one(step - exposed, (t.compute_s + t.offload_s) * 1e3)},
        {"exposed_comm", one(exposed, t.exposed_comm_s * 1e3)},
        {"copies", {{"measured_ms", nullptr}, {"predicted_ms", t.copies_s * 1e3}}},
        {"host_update", {{"measured_ms", nullptr}, {"predicted_ms", t.host_update_s * 1e3}}}};
    // The step's two parts, measured apart: which one's error in ms is larger.
    const double dc = std::abs(vs["compute"]["predicted_ms"].get<double>() - (step - exposed)),
                 de = std::abs(t.exposed_comm_s * 1e3 - exposed);
    vs["missed_most"] = dc >= de ? "compute" : "exposed_comm";
    time["vs"] = vs;
}

void print_time_comparison(const nlohmann::json& r) {
    if (!r.contains("time") || !r["time"].contains("vs")) return;
    const auto& vs = r["time"]["vs"];
    auto part = [&](const char* key, const char* name) {
        const auto& x = vs[key];
        return fmt::format("{} {:.1f} / {:.1f} ms ({:+.0f}%)", name,
                           x["predicted_ms"].get<double>(), x["measured_ms"].get<double>(),
                           100.0 * x["error"].get<double>());
    };
    fmt::print("rank {} predicted / measured (median, profile {}): {}; {}; {}; missed most: {}\n",
               r["rank"].get<int>(), r["time"]["profile"].get<std::string>(), part("step", "step"),
               part("compute", "compute"), part("exposed_comm", "exposed communication"),
               vs["missed_most"].get<std::string>());
    const auto& p = r["time"]["predicted"];
    if (p["offload_ms"].get<double>() > 0)
        fmt::print("rank {} predicted offload: copies {:.1f} ms, host AdamW {:.1f} ms, pipelined "
                   "{:.1f} ms (not timed apart in a run)\n",
                   r["rank"].get<int>(), p["copies_ms"].get<double>(),
                   p["host_update_ms"].get<double>(), p["offload_ms"].get<double>());
    fmt::print("rank {} predicted critical path: {}\n", r["rank"].get<int>(),
               p["critical_path"].get<std::string>());
}

} // namespace shardlab
