// The end-of-run report: for every rank, peak and current bytes per memory category (requested,
// beside the allocator's reserved bytes), the per-phase peaks, and per collective the calls, bytes
// sent (in all and per link class: intra_node, inter_node) and seconds — each beside the plan
// model's prediction — and the step time split into compute and exposed communication; as JSON
// (gathered to rank 0 for report.json) and as tables.
#pragma once

#include "comm/comm_stats.h"
#include "comm/watched_calls.h"
#include "core/memory_tracker.h"
#include "launch/resident_memory.h"
#include "plan/memory_plan.h"

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace shardlab {

struct HostDeviceTraffic {
    std::uint64_t device_to_host = 0, host_to_device = 0;
};

// The caching allocators' most reserved bytes, per arena.
struct ReservedBytes {
    std::uint64_t device = 0, host = 0;
};

// Wall time of the training steps, and the part the compute stream spent waiting for
// communication.
struct RunTiming {
    std::vector<double> steps_s, exposed_s; // per step
    void add(double step, double exposed) {
        steps_s.push_back(step);
        exposed_s.push_back(exposed);
    }
    double step_seconds() const { return std::accumulate(steps_s.begin(), steps_s.end(), 0.0); }
    double exposed_comm_seconds() const {
        return std::accumulate(exposed_s.begin(), exposed_s.end(), 0.0);
    }
};

// What the GPU's driver counts as in use (cudaMemGetInfo) beside what the caching allocator holds
// now: the difference is what the tracker cannot see — the CUDA context, cuBLAS's workspace,
// NCCL's buffers, and other processes on a shared GPU.
struct DriverMemory {
    std::uint64_t in_use = 0, reserved = 0;
};

struct RankMeasurements {
    std::string device; // Backend::describe()
    std::optional<DriverMemory> driver;
    MemoryCounts memory;
    CommStats comm;
    std::vector<PhaseSnapshot> phases;
    ReservedBytes reserved;
    HostDeviceTraffic traffic;
    RunTiming timing;
    long skipped_steps = 0;
    ResidentPeaks resident;
};

// --reproducible's bytes and memory beside the same run's without it, from the plan (null
// without --reproducible); the report's ranks[i].reproducible_cost and `plan --json`'s.
nlohmann::json reproducible_cost_json(const Plan& p);

// This rank's part of report.json: {"rank", "device", "memory", "reserved", "phases", "comm",
// "host_device_bytes", "time", "skipped_steps", "resident"}, "gpu_driver" on a GPU and
// "reproducible_cost" with --reproducible. The
// predictions are for `steps_run` steps, `steps_applied` of which applied their update.
nlohmann::json rank_report(int rank, const RankMeasurements& m, const Plan& plan, int steps_run,
                           int steps_applied);

// Every rank's report, on rank 0 (empty elsewhere); a watched gather.
std::vector<nlohmann::json> gather_reports(const nlohmann::json& mine, WatchedComm& comm);

// by_link: each collective's bytes per link class under its row (a run on more than one node).
void print_rank_report(const nlohmann::json& r, bool by_link = false);

// This moment's memory on every rank, for steps.jsonl (--log-memory): on rank 0
// {"tracked": [{category: current bytes, ...} per rank], "rss": [resident bytes per rank]}, where
// tracked counts both arenas; elsewhere null. A watched gather over `comm`.
nlohmann::json memory_sample(const MemoryTracker& tracker, WatchedComm& comm);

} // namespace shardlab
