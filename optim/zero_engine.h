// ZeroEngine: data-parallel parameters, gradients and optimizer state, sharded by ZeRO stage.
// Each sharding unit (embeddings, a block, the final norm with any untied head) is one flat buffer
// padded to a multiple of N and cut into N contiguous shards; rank r "owns" shard r (at stage 0,
// the whole unit):
//
//   stage  parameters                  gradients                       master, m, v
//   0      full                        full; all-reduced at the step   full (every rank updates)
//   1      full                        full; reduce-scattered at step  owned shard
//   2      full                        owned shard (+ full gradients   owned shard
//                                      while a unit's backward runs)
//   3      owned shard; gathered on    as stage 2                      owned shard
//          acquire (optim/gather_schedule.h)
//
// Hybrid sharding (FSDP2's HSDP, DeepSpeed's MiCS; ZeroGroups): at stages 1-3 "N" above is the
// shard group's S ranks — units are padded to a multiple of S, rank r owns shard r mod S — and the
// N/S replicas of each shard all-reduce it across the replicate group after each reduce-scatter.
// Stage 0 ignores the groups (a plain all-reduce over the world).
//
// Every stage uses the same ring collectives on the same padded units, so each gradient element
// is summed in the same order, and the gradient norm is always taken over shard ranges: losses
// and parameters are bitwise identical across stages. Where the update runs — on the device or,
// with offload, on the host — is the Updater's business.
//
// Streams: collectives run on the comm stream; compute waits for them through events (each such
// wait is timed: the step's *exposed* communication). ZeRO-3 gathers `prefetch` units ahead, so
// their AllGathers overlap the compute of the unit before; stages 2-3 reduce-scatter a unit's
// gradient while the next unit's backward runs.
#pragma once

#include "comm/communicator.h"
#include "core/device_context.h"
#include "model/ops.h"
#include "model/param_init.h"
#include "model/param_layout.h"
#include "model/precision.h"
#include "model/unit_params.h"
#include "optim/gather_schedule.h"
#include "optim/loss_scaler.h"
#include "optim/stage_policy.h"
#include "optim/updater.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

namespace shardlab {

struct ZeroOptions {
    int stage = 0;
    Precision precision = Precision::bf16;
    int prefetch = 0;            // stage 3: units gathered ahead of use
    float grad_clip = 1.0f;      // global-norm clipping; 0 disables
    float loss_scale = 65536.0f; // fp16's initial dynamic loss scale
    // --reproducible (optim/exact_sum.h): the global batch's sequences G; 0: off. Each backward
    // is then one sequence's; its gradient is summed in int64 fixed point, divided by G at the
    // step, and the norm and loss summed in fixed point too: the same bits at any N.
    std::uint64_t exact_sequences = 0;
};

// The communicators an engine works over. Flat ZeRO: everything over the world. Hybrid: shards
// over `shard` (S consecutive ranks), each shard's gradient averaged across `replicate` (the N/S
// ranks holding the same shard), the loss mean over `world`. Not owned.
struct ZeroGroups {
    Communicator& world;
    Communicator* shard = nullptr;     // nullptr: the world
    Communicator* replicate = nullptr; // nullptr (or one rank): no replicas
    // ZeRO++ hpZ (stage 3): the node's ranks, each keeping a secondary shard (1/K of every unit,
    // in the parameters' dtype) filled from a unit's first gather in a micro-batch; every later
    // gather of the unit in that micro-batch (backward's, the tied head's) is an all-gather of the
    // secondary shards inside the node. nullptr: none. Its ranks must lie inside the shard group.
    Communicator* secondary = nullptr;
};

struct StepResult {
    double grad_norm = 0; // of the averaged, unscaled gradient, before clipping
    bool skipped = false; // the gradient norm was not finite (fp16: overflow): no update
    float loss_scale = 1;
    bool redo = false; // --reproducible: a gradient outgrew its exponent; run the step again
};

class ZeroEngine : public UnitParams {
  public:
    // `init` gives the first fp32 values, the same on every rank; each rank asks only for what
    // it holds, one unit at a time: the whole unit at stages 0-2, its shard at stage 3.
    ZeroEngine(const ParamLayout& layout, const ZeroOptions& options, ZeroGroups groups,
               DeviceContext& context, Ops& ops, Updater& updater, const InitialValues& init);
    ZeroEngine(const ParamLayout& layout, const ZeroOptions& options, Communicator& comm,
               DeviceContext& context, Ops& ops, Updater& updater, const InitialValues& init)
        : ZeroEngine(layout, options, ZeroGroups{comm}, context, ops, updater, init) {}
    // The same from every unit's values in memory (unpadded).
    ZeroEngine(const ParamLayout& layout, const ZeroOptions& options, Communicator& comm,
               DeviceContext& context, Ops& ops, Updater& updater,
               const std::vector<std::vector<float>>& init)
        : ZeroEngine(layout, options, comm, context, ops, updater, initial_values_from(init)) {}

    // UnitParams, called by the model.
    const void* acquire(int unit) override;
    void release(int unit) override;
    void* grads(int unit) override;
    void grads_done(int unit) override;

    // Call before each forward (training or evaluation): restarts the gather schedule.
    void begin_micro_batch(bool accumulate);
    // Communicates gradients as the stage requires, clips, updates. Returns the norm etc.
    StepResult step(float lr);
    // Mean of a per-rank value over all ranks of the world (the loss).
    double average(double value);
    // --reproducible: the mean of every rank's `values` (count of them in all), summed in fixed
    // point: the same bits whichever rank holds which value.
    double exact_average(const std::vector<double>& values, std::uint64_t count);
    bool reproducible() const { return o_.exact_sequences > 0; }
    // Seconds the compute stream waited for communication since the last call (waits for it).
    double take_exposed_comm_seconds();

    float grad_scale() const; // what the model multiplies d(loss) by: the loss scale (fp16) or 1
    long skipped_steps() const { return scaler_.skipped(); }

    // One unit's full fp32 master weights, unpadded, gathered from every rank's shard
    // (collective), handed to fn(first element, values, count) in order, in pieces of at most
    // kConsolidationPiece elements: the final hash and --save-weights stream them, so a rank
    // holds the gathered unit once (device workspace) and, sharded (ZeRO 1-3), never a host copy
    // of it whole. At ZeRO-0 every rank's master is whole: it is read to the host and handed over
    // from there.
    static constexpr std::size_t kConsolidationPiece = std::size_t(4) << 20; // 16 MB of fp32
    void for_each_consolidated_piece(
        int unit, const std::function<void(std::uint64_t, const float*, std::size_t)>& fn,
        std::size_t piece = kConsolidationPiece);
    // The same, whole (tests).
    std::vector<float> consolidated_unit(int unit);
    // Every unit's (tests; a run streams them through for_each_consolidated_piece instead).
    std::vector<std::vector<float>> consolidated_master();

    // Resume support: this rank's owned state (master, or the fp32 params; m; v), unit by unit,
    // each vector starting at element `offset[u]` of its unit (owned_offset) and owned_count long.
    struct OwnedState {
        std::vector<std::vector<float>> master, m, v;
        std::vector<std::uint64_t> offset;
        int step = 0;      // optimizer updates applied (AdamW's bias correction counts these)
        int iteration = 0; // training-loop steps done, skipped (non-finite) ones included
        float loss_scale = 1;
        int good_steps = 0;
        long skipped = 0;
        std::vector<int> exponents; // --reproducible: each unit's fixed-point exponent; else empty
    };
    OwnedState save_owned();
    void load_owned(const OwnedState& s);

    void make_unit(int unit, const InitialValues& init);
    void allocate_exact_state();
    std::uint64_t owned_offset(int unit) const;
    std::uint64_t owned_count(int unit) const;

  private:
    struct Unit {
        Allocation params;          // stage 0-2: full; stage 3: owned shard
        Allocation gathered;        // stage 3: the full unit while live (comm_buffers)
        EventPtr gathered_at;       // where the comm stream finished gathering it
        Allocation grads;           // stage 0-1: full; stage 2-3: owned shard
        Allocation grads_full;      // stage 2-3: the full gradient while backward needs it
        Allocation secondary;       // hpZ: this rank's node-local shard of the parameters
        bool gathered_once = false; // hpZ: gathered in this micro-batch (the secondary is fresh)
        Allocation exact; // --reproducible: the int64 gradient sum (stage 0-1: full; 2-3: shard)
    };
    Tensor flat(const Allocation& a, std::uint64_t offset, std::uint64_t count) const;
    OwnedShard owned(int unit) const;
    void expect(int unit, UnitUse use); // stage 3: the model follows the schedule
    void gather(int unit);
    void release_gathered();
    void release_retiring();
    // The compute stream waits for `done` (default: all communication enqueued so far); timed.
    void wait_for_comm(const EventPtr& done = nullptr);
    void fold_comm_waits();
    void reduce_gradients();
    void clear_full_gradients();
    // Hybrid: reduces this rank's reduced shard (`count` elements of dtype t) across the replicas —
    // averaged in the parameters' dtype, summed in int64 under --reproducible.
    void reduce_across_replicas(void* shard, std::uint64_t count, const std::string& unit, DType t,
                                ReduceOp op);
    float global_squared_norm();
    // --reproducible (optim/exact_sum.h): the same steps in exact arithmetic.
    Tensor flat_i64(const Allocation& a, std::uint64_t offset, std::uint64_t count) const;
    Tensor exact_owned(int unit) const;
    void exact_grads_done(int unit);
    void reduce_exact();
    std::vector<float> global_maxima();
    double exact_squared_norm(const std::vector<int>& exponents); // of each unit's squares
    void clear_exact();
    StepResult exact_step(float lr);
    void update(StepResult& r, double squared_norm, float lr);
    void publish(const EventPtr& updated);

    const ParamLayout& layout_;
    ZeroOptions o_;
    Communicator& world_;     // the loss mean
    Communicator& comm_;      // the shard group: ZeRO's gathers and reduce-scatters (flat: world)
    Communicator* replicate_; // hybrid: the ranks holding this rank's shard; else nullptr
    Communicator* secondary_; // hpZ: the node group; else nullptr
    DeviceContext& ctx_;
    Ops& ops_;
    Updater& updater_;
    StagePolicy policy_; // what o_.stage shards (optim/stage_policy.h)
    DType pdt_;
    int n_, rank_; // in the shard group
    std::vector<std::uint64_t> padded_;
    std::vector<Unit> units_;
    std::vector<GatherEvent> schedule_;
    std::size_t pos_ = 0;
    bool accumulate_ = false; // stage 2-3: add this micro-batch's shard to the previous ones
    int retiring_ = -1;       // stage 2-3: the unit whose reduce-scatter may still read its grads
    EventPtr grads_released_; // stage 2-3: where the comm stream last let go of a full gradient
    EventPtr last_release_;   // stage 3: compute's point where it last let go of a gathered unit
    Allocation scalars_;      // two fp32 values on the device: the squared norm, a mean
    LossScaler scaler_;
    int step_ = 0;
    // --reproducible: every unit's exponent, the sequences' largest |gradient| per unit (device
    // fp32), two full-unit int64 buffers a sequence's gradient is reduce-scattered from (stages
    // 2-3, used in turn) and where the comm stream last let go of each.
    std::vector<int> exponent_;
    Allocation amax_, exact_full_[2];
    EventPtr exact_free_[2];
    int exact_slot_ = 0;
    struct Wait {
        EventPtr before, after;
    };
    std::deque<Wait> comm_waits_; // compute-stream waits for communication, not yet timed
    double exposed_seconds_ = 0;  // the waits timed so far
};

} // namespace shardlab
