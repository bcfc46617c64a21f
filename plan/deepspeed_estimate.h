// DeepSpeed's own estimate of ZeRO model-state memory, reproduced so that `shardlab plan
// --estimator deepspeed` can put it beside shardlab's plan. These are DeepSpeed's formulas, not
// shardlab's: estimate_zero2_model_states_mem_needs (deepspeed/runtime/zero/stage_1_and_2.py) and
// estimate_zero3_model_states_mem_needs (stage3.py), and the rows their *_all_cold / *_all_live
// printers emit, in their order. docs/MEMORY.md ("DeepSpeed's estimator, side by side") cites the
// source lines and works the GPT-2 figures out by hand.
//
// DeepSpeed mixes integer and floating-point arithmetic (Python ints, `/` true division, a 1.5
// float factor, int() truncation); the functions repeat it step by step in double, so the bytes are
// DeepSpeed's to the byte while 18·Ψ stays below 2^53 (Ψ < 5·10^14).
#pragma once

#include "plan/plan_model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

// What DeepSpeed's model_to_params would return for the Hugging Face model of this shape:
// total_params counts a tied weight once; largest_layer_params is the most parameters any one
// module holds itself (recurse=False).
struct DeepSpeedModelCounts {
    std::uint64_t total_params = 0;
    std::uint64_t largest_layer_params = 0; // 0 for a bare parameter count: it has no layers
    std::string largest_layer;              // the module's name in the Hugging Face model
};
DeepSpeedModelCounts deepspeed_model_counts(const PlanModel& m);

// DeepSpeed's num_nodes and num_gpus_per_node; total_gpus is their product.
struct DeepSpeedCluster {
    int nodes = 1, gpus_per_node = 1;
};

// One printed row. gpu_bytes is per GPU; cpu_bytes is DeepSpeed's "per CPU" column, the host
// memory of one node. Stage 2 has no parameter offload and no zero_init (both false).
struct DeepSpeedRow {
    int stage = 2;
    bool offload_optimizer = false, offload_param = false, zero_init = false;
    std::uint64_t gpu_bytes = 0, cpu_bytes = 0;
};

inline constexpr double deepspeed_buffer_factor = 1.5; // DeepSpeed's additional_buffer_factor

DeepSpeedRow deepspeed_zero2(std::uint64_t total_params, DeepSpeedCluster c, bool offload_optimizer,
                             double buffer_factor = deepspeed_buffer_factor);
DeepSpeedRow deepspeed_zero3(std::uint64_t total_params, std::uint64_t largest_layer_params,
                             DeepSpeedCluster c, bool offload_optimizer, bool offload_param,
                             bool zero_init, double buffer_factor = deepspeed_buffer_factor);

// The rows the two printers emit, in their order: ZeRO-2 with offload_optimizer cpu, none; then
// ZeRO-3 (offload_optimizer, offload_param, zero_init) = (cpu, cpu, 1), (cpu, cpu, 0),
// (cpu, none, 1), (cpu, none, 0), (none, none, 1), (none, none, 0).
std::vector<DeepSpeedRow> deepspeed_rows(const DeepSpeedModelCounts& m, DeepSpeedCluster c);

} // namespace shardlab
