// The analytical memory and communication model: for a model, a rank count and a training
// configuration, the bytes each rank holds (per category, device and host) and sends per step
// (per collective). It describes exactly what shardlab's ZeRO engine does — it uses the engine's
// own policy: units padded to a multiple of N and full gradients held two at a time
// (optim/unit_shards.h), the gather schedule (optim/gather_schedule.h), offload's staging tiles —
// and the activations each family's model keeps, so a training report can hold measurement against
// it byte for byte. docs/MEMORY.md derives every line.
#pragma once

#include "comm/link_bytes.h"
#include "comm/node_layout.h"
#include "core/memory_tracker.h"
#include "model/attention_kind.h"
#include "model/checkpoint_policy.h"
#include "model/gemm_workspace.h"
#include "model/model_config.h"
#include "model/precision.h"
#include "plan/plan_model.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace shardlab {

enum class OptimizerStates {
    fp32,
    bf16,
    int8
}; // m and v; int8 is block-wise (2048) with fp32 scales

struct PlanOptions {
    int ranks = 1;
    int zero = 0;
    bool offload = false;
    Precision precision = Precision::bf16;
    bool master = true; // fp32 master weights in mixed precision (K = 12); false: K = 8
    OptimizerStates optimizer_states = OptimizerStates::fp32;
    CheckpointPolicy checkpoint{};
    AttentionKind attention = AttentionKind::flash; // what a block keeps for attention's backward
    int micro_batch = 1;
    int seq = 0; // 0: the model's context
    int grad_accum = 1;
    int prefetch = 0;         // ZeRO-3: units gathered ahead of use
    bool staged_comm = false; // collectives stage device buffers through host memory
    // Hybrid sharding (--shard-group): ZeRO 1-3 inside groups of this many consecutive ranks,
    // each shard averaged across the ranks/shard_group replicas. 0 or `ranks`: flat.
    int shard_group = 0;
    // ZeRO++ hpZ (--secondary-shard node, stage 3): a secondary shard of the 16-bit parameters
    // over this many ranks (a node), which every re-gather in a micro-batch reads. 0: none.
    int secondary_shard = 0;
    // Which node each rank is on, for the bytes by link class (empty: one node of `ranks`).
    NodeLayout nodes;
    bool inference = false;
    // --reproducible (optim/exact_sum.h): one sequence a forward and backward (the activations of
    // micro-batch 1, micro_batch x grad_accum passes), gradients summed in int64: 8-byte
    // reductions, an int64 sum beside the gradient, the norm and loss as int64 sums and every
    // unit's largest gradient all-gathered.
    bool reproducible = false;
    std::uint64_t gpu_bytes = 0; // 0: no GPU given
    std::string gpu_name;
    // The GEMM workspace of the run's backend for this precision (Backend::gemm_workspace; the
    // CPU backend's default OpenBLAS path is modelled). unmodelled: no workspace predicted.
    GemmWorkspace gemm_workspace = GemmWorkspace::unmodelled;
};

struct MemoryPlan {
    // Device (or, on the CPU backend, the device arena), per category: the peak of each.
    std::uint64_t params = 0, grads = 0, master = 0, optimizer = 0, activations = 0, buffers = 0,
                  kv_cache = 0;
    // Host arena (offload): master, m and v, the fp32 gradient of the owned range, and the
    // staging tiles the copies go through.
    std::uint64_t host_grads = 0, host_master = 0, host_optimizer = 0, host_staging = 0;
    // Host comm buffers: a ring step's send and receive chunks, staged (PlanOptions::staged_comm).
    std::uint64_t host_buffers = 0;
    std::uint64_t activations_generic = 0; // s·b·h·(34 + 5as/h) per layer (16-bit)
    bool activations_exact = false;        // activations is the implementation-exact count
    std::uint64_t device_total = 0, host_total = 0;
    // The device arena's workspace peak (model_workspace_bytes), where the GEMM library's is
    // modelled; not in device_total (docs/MEMORY.md section 11 says why).
    std::optional<std::uint64_t> workspace;
};

// The predicted device bytes of a category the MemoryTracker measures (core/memory_tracker.h): the
// one key that joins measurement and prediction. None for workspace where the plan does not
// model the GEMM library's (MemoryPlan::workspace).
std::optional<std::uint64_t> predicted_device_bytes(const MemoryPlan& m, Category c);

struct CommPlan {
    // Bytes this rank sends per step, per collective; keys as the report's: the op's name for the
    // world ("allreduce"), "<op>@shard" / "<op>@replicate" for a hybrid run's groups,
    // "allgather@node" for hpZ's gathers from the secondary shards.
    std::map<std::string, std::uint64_t> by_op;
    std::map<std::string, LinkBytes> by_op_link; // the same bytes split by link class
    std::uint64_t bytes_per_step = 0;
    std::map<std::string, std::uint64_t> calls; // calls per step, per collective
    // The part of by_op / by_op_link / calls sent only when a step's update is applied (stages
    // 1-2's all-gather of the updated parameters): a skipped step (a non-finite gradient norm)
    // sends none of it, nor any offload copy.
    std::map<std::string, LinkBytes> applied_only;
    std::map<std::string, std::uint64_t> applied_only_calls;
    std::uint64_t host_to_device = 0, device_to_host = 0; // offload traffic per applied step
    double ratio_to_dp = 0;                               // bytes_per_step / stage 0's
};

// What --reproducible costs: the same run's bytes and device memory without it.
struct ReproducibleCost {
    std::uint64_t default_bytes_per_step = 0, default_device_total = 0;
};

constexpr int kMicroBatchSearched = 1 << 20; // the largest micro-batch the fit search tries

struct Plan {
    PlanModel model;
    PlanOptions options;
    MemoryPlan memory;
    CommPlan comm;
    bool fits = true;
    int max_micro_batch = 0; // largest that fits the GPU; 0 when none does or no GPU given
    // Every micro-batch up to kMicroBatchSearched fits (max_micro_batch is that bound): memory
    // grows too little with it, or not at all (--reproducible runs a sequence a pass).
    bool max_micro_batch_unbounded = false;
    std::optional<ReproducibleCost> reproducible_cost; // with options.reproducible
};

// The options as the engine runs them: --reproducible makes every sequence its own micro-batch
// (micro-batch 1, micro_batch x grad_accum of them); otherwise unchanged.
PlanOptions as_run(PlanOptions o);

// Throws UsageError on options that contradict each other or the model.
Plan make_plan(const PlanModel& model, const PlanOptions& options, int rank = 0);

// Pieces the tests use directly.
std::uint64_t param_bytes_per_element(Precision p);
// One moment tensor (m or v) of n elements in format t: 4 n, 2 n, or 8-bit block-wise n bytes
// plus an fp32 absmax per 2048.
std::uint64_t moment_bytes(OptimizerStates t, std::uint64_t n);
// The model's workspace peak in a training step, on a backend whose GEMMs take `gemm` workspace
// (none where it is unmodelled): the engine's two scalars, the micro-batch's token ids and
// targets, one loss per micro-batch of the step, backward's gradient scratch tensors (the
// family's count, Family::gradient_scratch_bytes) and, beside them, the largest product's widened
// operands. docs/MEMORY.md section 11.
std::optional<std::uint64_t> model_workspace_bytes(const ModelConfig& c, int batch, int seq,
                                                   int grad_accum, Precision p, GemmWorkspace gemm);
// The generic per-model formula: per layer s·b·h·(34 + 5·a·s/h) bytes at 16 bits (x2 for fp32),
// 2·s·b·h for a checkpointed layer, plus one full layer while it is recomputed.
std::uint64_t generic_activation_bytes(int layers, int hidden, int heads, int batch, int seq,
                                       Precision p, CheckpointPolicy ck);
// Named GPU capacities: a100-40, a100-80, h100-80, h200-141; or a byte count ("80e9",
// "85899345920").
std::uint64_t parse_gpu(const std::string& name);

} // namespace shardlab
