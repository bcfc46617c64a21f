// What each ZeRO stage shards, and when it communicates: stated once, read by the engine
// (optim/zero_engine.cpp), which does it, and by the plan (plan/memory_plan.cpp), which predicts
// it. Stage k shards the first k of: optimizer state (fp32 master, m, v), gradients, parameters.
#pragma once

#include "core/error.h"

#include <string>

namespace shardlab {

// What a step's gradient reduction is.
enum class GradientReduction {
    all_reduce,     // once per step, after backward: every rank keeps the whole averaged gradient
    reduce_scatter, // once per step, after backward: each rank keeps its shard's average
    per_unit        // during backward, each unit's gradient reduce-scattered once it is final
};

struct StagePolicy {
    // Optimizer state of the owned 1/N only (the update writes that range of the parameters).
    bool shards_optimizer_state = false;
    // Only the owned shard of each gradient is kept; a unit's full gradient lives from its first
    // use in backward until it is reduce-scattered (optim/unit_shards.h: two at a time).
    bool shards_gradients = false;
    // Only the owned shard of each parameter is kept; a unit is all-gathered when the model
    // acquires it and released after use (optim/gather_schedule.h).
    bool shards_parameters = false;

    GradientReduction reduction() const {
        return shards_gradients         ? GradientReduction::per_unit
               : shards_optimizer_state ? GradientReduction::reduce_scatter
                                        : GradientReduction::all_reduce;
    }
    // After the update, the new shards are all-gathered into every rank's full parameters: the
    // stages that shard the update's state but keep whole parameters (1 and 2).
    bool gathers_after_update() const { return shards_optimizer_state && !shards_parameters; }
};

// The stage and the ZeRO-3 prefetch depth as the flags give them; a UsageError names the flag. The
// plan, `shardlab train` (before anything runs) and the engine all ask it.
inline void check_stage(int stage, int prefetch) {
    if (stage < 0 || stage > 3)
        throw UsageError("--zero " + std::to_string(stage) +
                         " is not a ZeRO stage; use 0, 1, 2 or 3");
    if (prefetch < 0) throw UsageError("--prefetch must be >= 0");
    if (prefetch > 0 && stage != 3)
        throw UsageError("--prefetch applies to ZeRO-3 only; drop it or use --zero 3");
}

// Stage 0-3 (check_stage).
constexpr StagePolicy stage_policy(int stage) {
    return StagePolicy{stage >= 1, stage >= 2, stage >= 3};
}

} // namespace shardlab
