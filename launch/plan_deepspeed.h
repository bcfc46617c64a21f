// `shardlab plan --estimator deepspeed`: DeepSpeed's model-state estimate
// (plan/deepspeed_estimate.h) printed as DeepSpeed prints it, then row by row beside shardlab's
// plan for the same stage and optimizer offload, and one line per thing DeepSpeed's figures leave
// out.
#pragma once

#include "plan/deepspeed_estimate.h"
#include "plan/memory_plan.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace shardlab {

// shardlab's side of one configuration, split so that its parts add up to the device total.
struct ShardlabSide {
    Plan plan;
    std::uint64_t device_states = 0;      // params, owned gradient shard, master, m and v
    std::uint64_t gradient_transient = 0; // full unit gradients until their reduce-scatter
    std::uint64_t host_states = 0;        // offload: master, m, v and the fp32 gradient
};

struct DeepSpeedComparison {
    DeepSpeedModelCounts counts;
    DeepSpeedCluster cluster;
    std::vector<DeepSpeedRow> rows;
    // shardlab's plans for ZeRO-2, ZeRO-2 + offload, ZeRO-3, ZeRO-3 + offload (side(row) picks).
    std::vector<ShardlabSide> sides;
    const ShardlabSide& side(const DeepSpeedRow& r) const;
};

// base: the plan's options (precision, micro-batch, ...); its ranks must be the cluster's GPUs.
DeepSpeedComparison compare_with_deepspeed(const PlanModel& model, const PlanOptions& base,
                                           DeepSpeedCluster cluster, int rank);
void print_deepspeed_comparison(const DeepSpeedComparison& c);
// The `deepspeed` list of plan --json: one object per row, in DeepSpeed's order.
nlohmann::json deepspeed_json(const DeepSpeedComparison& c);
// The `deepspeed_model` object: DeepSpeed's inputs.
nlohmann::json deepspeed_model_json(const DeepSpeedComparison& c);

} // namespace shardlab
