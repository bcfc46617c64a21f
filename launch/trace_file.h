// The --trace file: every rank's trace events (core/tracer.h) merged on rank 0 into one Chrome /
// Perfetto JSON trace — a process per rank, a track per stream.
#pragma once

#include "core/tracer.h"

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <string>

namespace shardlab {

// Collective over `comm`; rank 0 writes `path` ({"traceEvents": [...], "otherData": about}).
void write_trace(const std::string& path, Tracer& tracer, const nlohmann::json& about,
                 MPI_Comm comm);

} // namespace shardlab
