// The end-of-run report: for every rank, peak and current bytes per memory category and per
// collective the calls, bytes sent and seconds — each beside the plan model's prediction — as
// JSON (gathered to rank 0 for report.json) and as tables.
#pragma once

#include "comm/comm_stats.h"
#include "core/memory_tracker.h"
#include "plan/memory_plan.h"

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace shardlab {

struct HostDeviceTraffic {
    std::uint64_t device_to_host = 0, host_to_device = 0;
};

// This rank's part of report.json: {"rank", "memory": {...}, "comm": {...}, "host_device_bytes":
// {...}}.
nlohmann::json rank_report(int rank, const MemoryCounts& memory, const CommStats& comm,
                           const Plan& plan, int steps_run, HostDeviceTraffic traffic);

// Every rank's report, on rank 0 (empty elsewhere).
std::vector<nlohmann::json> gather_reports(const nlohmann::json& mine, MPI_Comm comm);

void print_rank_report(const nlohmann::json& r);

} // namespace shardlab
