// The time model: a plan (model, configuration, the bytes of every collective) and a machine
// profile (plan/machine_profile.h) in, the seconds of one training step of one rank out — each
// compute term (GEMM FLOPs over the profile's GEMM rate, attention's FLOPs likewise, the
// memory-bound kernels' bytes over their bandwidth), each collective's time per link class from
// the fitted alpha and beta, the offload pipeline, and then the exposure the engine's schedule
// leaves (optim/zero_engine.cpp, optim/gather_schedule.h): the predicted step time, tokens/s and
// the term on the critical path. docs/TIME.md sections 5-9 derive every line.
#pragma once

#include "comm/collective_op.h"
#include "comm/link_bytes.h"
#include "comm/node_layout.h"
#include "plan/machine_profile.h"
#include "plan/memory_plan.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardlab {

// The work of one micro-batch on one rank, before any rate is applied (section 5), by the part
// of the model that runs it: FLOPs of the GEMMs, of attention, and the memory-bound kernels' bytes.
struct WorkPart {
    double gemm_flop = 0, attention_flop = 0, bytes = 0;
};
struct StepWork {
    WorkPart block_forward, block_backward; // one transformer block
    WorkPart head_forward, head_backward;   // the final norm, the head's GEMMs, cross-entropy
    WorkPart embed_forward, embed_backward; // token (and GPT-2's position) embeddings
    int layers = 0;
    int recomputed_blocks = 0; // checkpointed: their forward runs again in backward
};
StepWork micro_batch_work(const PlanModel& m, const PlanOptions& o);

// Causal attention's FLOPs for one block over B sequences of T tokens, hidden d (section 5).
struct AttentionFlop {
    double forward = 0, backward = 0;
};
AttentionFlop attention_flop(double B, double T, double d, AttentionKind kind);

// One collective of the step, all its calls: seconds on the compute stream's clock if it ran
// alone, and the link class that paces its ring (section 6).
struct CollectiveTime {
    std::string op;          // the plan's key: "allreduce", "reduce_scatter@shard", ...
    std::uint64_t calls = 0; // per step
    LinkBytes bytes;         // sent by this rank per step (the plan's bytes)
    double seconds = 0;      // all calls, each alone
    std::string link;        // "intra_node" | "inter_node": the slowest class its ring crosses
    // Every class the ring crosses: the seconds its calls would take were that class the pace.
    std::map<std::string, double> seconds_by_link;
};

// Seconds of one ring collective: steps (alpha + beta b) on the slowest class the group's ring
// crosses, b the bytes per step. `group` is the communicator's node layout, `rank` this rank in
// it. Zero for a group of one.
double collective_seconds(const MachineProfile& p, CollectiveOp op, std::uint64_t count,
                          std::uint64_t elem_bytes, const NodeLayout& group, int rank,
                          std::string* link = nullptr,
                          std::map<std::string, double>* by_link = nullptr);

struct TimePrediction {
    // Per step (grad_accum micro-batches), compute stream, each term alone.
    double forward_s = 0, backward_s = 0, recompute_s = 0;  // backward_s excludes recompute
    double gemm_s = 0, attention_s = 0, memory_bound_s = 0; // the same seconds by kind
    double optimizer_s = 0;   // the device AdamW update (none with offload)
    double copies_s = 0;      // offload: gradient down + parameters up, unpipelined
    double host_update_s = 0; // offload: host AdamW, unpipelined
    double offload_s = 0;     // offload: the tile pipeline's span (section 7)
    std::vector<CollectiveTime> collectives;
    double comm_s = 0;         // every collective alone, summed
    double exposed_comm_s = 0; // the compute stream's waits for communication (section 8)
    std::map<std::string, double> exposed_by_op; // the same, by the collective waited for
    double compute_s = 0;                        // forward + backward + recompute + optimizer
    double step_s = 0;                           // compute_s + exposed_comm_s + offload_s
    double tokens_per_s = 0; // all ranks: ranks x micro-batch x seq x grad_accum / step_s
    double tokens_per_s_per_rank = 0;
    std::string critical_path; // the largest term of step_s, named
};

// Throws UsageError where the profile lacks what the plan needs (a GEMM dtype, a link class)
// or the model has no shape (a bare parameter count), or a Llama is asked to materialize attention.
TimePrediction predict_time(const Plan& plan, const MachineProfile& profile, int rank = 0);

nlohmann::json time_json(const TimePrediction& t);
// The breakdown as a table, for `plan --time`.
std::string describe_time(const TimePrediction& t);

} // namespace shardlab
