// Gathers each rank's events as text (a watched gather, outside the collectives' statistics) and
// writes them as one file on rank 0.
#include "launch/trace_file.h"

#include "launch/cli_util.h"

namespace shardlab {

std::vector<std::string> gather_trace(Tracer& tracer, WatchedComm& comm) {
    return comm.gather(tracer.events().dump(), 0, "--trace: every rank's events to rank 0");
}

void write_trace(const std::string& path, const std::vector<std::string>& parts,
                 const nlohmann::json& about) {
    if (parts.empty()) return; // not rank 0
    nlohmann::json events = nlohmann::json::array();
    for (const std::string& part : parts)
        for (auto& e : nlohmann::json::parse(part)) events.push_back(std::move(e));
    write_json_file(
        path,
        {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", about}});
}

} // namespace shardlab
