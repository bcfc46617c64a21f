// `plan --fit`: which configuration trains fastest in the memory a rank has? Every combination of
// ZeRO stage, offload, activation checkpointing, micro-batch, prefetch and shard group is planned
// (plan/memory_plan.h) and, where its device bytes fit the budget, timed (plan/time_model.h); the
// fitting ones are ranked by predicted tokens/s. Nothing is run: the search is the two models.
// docs/TIME.md section 12 says what is searched and why.
#pragma once

#include "plan/machine_profile.h"
#include "plan/memory_plan.h"
#include "plan/time_model.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardlab {

struct FitRequest {
    std::uint64_t budget_bytes = 0; // a rank's device memory
    // Sequences per step over all ranks, held fixed: micro-batch x grad-accum x N. 0: free —
    // micro-batches of 1, 2, 4, ... while they fit, each at the base options' grad-accum.
    int global_batch = 0;
    int top = 5; // places to list: the best of a family (stage, offload, sharding, checkpoint)
                 // and the families tied with it
};

struct FitCandidate {
    Plan plan;
    TimePrediction time;
    // Other families' best, predicted within kFitTie of this one: the model cannot rank them
    // apart, so they are listed with it, not in the places after it.
    std::vector<FitCandidate> ties;
};

// Predictions closer than this (relative tokens/s) are a tie.
constexpr double kFitTie = 0.01;

struct FitResult {
    // Fitting, fastest first: each the fastest of its family, with the families tied with it;
    // at most `top` of them.
    std::vector<FitCandidate> ranked;
    int searched = 0, fitting = 0;
    // The configuration with the fewest device bytes of all searched: the answer when nothing fits.
    std::optional<Plan> smallest;
};

// `base` fixes everything the search does not vary (ranks, nodes, precision, master, optimizer
// states, sequence length, attention, --reproducible). Throws UsageError when the global batch
// does not divide over the ranks.
FitResult fit_search(const PlanModel& model, const PlanOptions& base, const MachineProfile& profile,
                     const FitRequest& request, int rank = 0);

// "ZeRO-3 + offload, checkpoint all, micro-batch 2 x 4, prefetch 1, hsdp:2": one line.
std::string describe_options(const PlanOptions& o);

// The smallest rank count (a power of two times N, up to 2^20 ranks) at which the least memory
// configuration (ZeRO-3 + offload, checkpoint all, micro-batch 1) fits; 0 when none does (what
// what does not shrink with N — one sequence's activations and the gathered units — is beyond
// the budget). `last`, if given, receives the plan at the last rank count tried.
int ranks_to_fit(const PlanModel& model, const PlanOptions& base, std::uint64_t budget_bytes,
                 Plan* last = nullptr);

} // namespace shardlab
