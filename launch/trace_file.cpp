// Gathers each rank's events as text (plain MPI, outside the collectives' statistics) and writes
// them as one file on rank 0.
#include "launch/trace_file.h"

#include "comm/gather_to_root.h"
#include "launch/cli_util.h"

namespace shardlab {

void write_trace(const std::string& path, Tracer& tracer, const nlohmann::json& about,
                 MPI_Comm comm) {
    const std::vector<std::string> parts = gather_to_root(tracer.events().dump(), comm);
    if (parts.empty()) return; // not rank 0
    nlohmann::json events = nlohmann::json::array();
    for (const std::string& part : parts)
        for (auto& e : nlohmann::json::parse(part)) events.push_back(std::move(e));
    write_json_file(
        path,
        {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", about}});
}

} // namespace shardlab
