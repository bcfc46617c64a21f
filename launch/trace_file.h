// The --trace file: every rank's trace events (core/tracer.h) merged on rank 0 into one Chrome /
// Perfetto JSON trace — a process per rank, a track per stream.
#pragma once

#include "comm/watched_calls.h"
#include "core/tracer.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shardlab {

// Every rank's events as text, on rank 0 (empty elsewhere): a watched gather over `comm`, so a
// rank that never arrives is named and the job ends after --collective-timeout.
std::vector<std::string> gather_trace(Tracer& tracer, WatchedComm& comm);

// Rank 0 (the one holding `parts`) writes `path` ({"traceEvents": [...], "otherData": about});
// elsewhere nothing. Throws Error naming the path when it cannot.
void write_trace(const std::string& path, const std::vector<std::string>& parts,
                 const nlohmann::json& about);

} // namespace shardlab
