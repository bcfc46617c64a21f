// ZeroEngine: data-parallel parameters, gradients and optimizer state, sharded by ZeRO stage.
// Each sharding unit (embeddings, a block, ln_f) is one flat buffer padded to a multiple of N and
// cut into N contiguous shards; rank r "owns" shard r (stage 0: the whole unit).
//
//   stage | params          | grads                                   | master, m, v
//   0     | full            | full, all-reduced at the step           | full (every rank updates
//   all) 1     | full            | full, reduce-scattered at the step      | owned shard 2     |
//   full            | owned shard; a unit's full gradient      | owned shard
//         |                 | lives from its first use in backward to |
//         |                 | its reduce-scatter (grads_done)         |
//   3     | owned shard;    | as stage 2                              | owned shard
//         | gathered on acquire, per plan/gather_schedule.h           |
//
// Every stage uses the same ring collectives on the same padded units, so each gradient element
// is summed in the same order, and the gradient norm is always taken over shard ranges: losses
// and parameters are bitwise identical across stages. Offload keeps master, m, v and an fp32
// copy of the owned gradient in the host arena and runs AdamW there.
#pragma once

#include "comm/communicator.h"
#include "core/memory_tracker.h"
#include "model/param_layout.h"
#include "model/precision.h"
#include "model/unit_params.h"
#include "optim/adamw.h"
#include "optim/loss_scaler.h"
#include "plan/gather_schedule.h"

#include <cstdint>
#include <vector>

namespace shardlab {

struct ZeroOptions {
    int stage = 0;
    bool offload = false;
    Precision precision = Precision::bf16;
    int prefetch = 0;            // stage 3: units gathered ahead of use
    float grad_clip = 1.0f;      // global-norm clipping; 0 disables
    float loss_scale = 65536.0f; // fp16's initial dynamic loss scale
};

struct StepResult {
    double grad_norm = 0; // of the averaged, unscaled gradient, before clipping
    bool skipped = false; // fp16 overflow: no update
    float loss_scale = 1;
};

class ZeroEngine : public UnitParams {
  public:
    // `init` holds every unit's fp32 values (unpadded), identical on every rank.
    ZeroEngine(const ParamLayout& layout, const ZeroOptions& options, Communicator& comm,
               MemoryTracker& tracker, const std::vector<std::vector<float>>& init,
               AdamWConfig adam);

    // UnitParams, called by the model.
    const void* acquire(int unit) override;
    void release(int unit) override;
    void* grads(int unit) override;
    void grads_done(int unit) override;

    // Call before each forward (training or evaluation): restarts the gather schedule.
    void begin_micro_batch(bool accumulate);
    // Communicates gradients as the stage requires, clips, updates. Returns the norm etc.
    StepResult step(float lr);
    // Mean of a per-rank value over all ranks (the loss).
    double average(double value);

    float grad_scale() const; // what the model multiplies d(loss) by: the loss scale (fp16) or 1
    int step_count() const { return step_; }

    // Full fp32 master weights, unpadded, unit by unit (gathered from every rank's shard).
    std::vector<std::vector<float>> consolidated_master();
    std::uint64_t host_device_bytes() const { return host_to_device_ + device_to_host_; }
    std::uint64_t host_to_device_bytes() const { return host_to_device_; }
    std::uint64_t device_to_host_bytes() const { return device_to_host_; }

    // Resume support: this rank's owned state (master, or the fp32 params; m; v), unit by unit.
    struct OwnedState {
        std::vector<std::vector<float>> master, m, v;
        int step = 0;      // optimizer updates applied (AdamW's bias correction counts these)
        int iteration = 0; // training-loop steps done, skipped (fp16 overflow) ones included
        float loss_scale = 1;
        int good_steps = 0;
        long skipped = 0;
    };
    OwnedState save_owned() const;
    void load_owned(const OwnedState& s);

    std::uint64_t owned_offset(int unit) const;
    std::uint64_t owned_count(int unit) const;
    std::uint64_t padded(int unit) const { return padded_[unit]; }

  private:
    struct Unit {
        Allocation params;       // stage 0-2: full; stage 3: owned shard
        Allocation gathered;     // stage 3: the full unit while live
        Allocation grads;        // stage 0-1: full; stage 2-3: owned shard
        Allocation grads_full;   // stage 2-3: transient full gradient
        Allocation master, m, v; // owned range, fp32 (host arena with offload)
        Allocation host_grad;    // offload: fp32 copy of the owned gradient
    };
    bool has_master() const;
    float* master_ptr(int unit);
    void* owned_grad(int unit);
    void gather(int unit);
    double local_sq_norm(); // over shard ranges, whatever the stage
    void update_unit(int unit, float lr, float scale);
    void publish_params(int unit);

    const ParamLayout& layout_;
    ZeroOptions o_;
    Communicator& comm_;
    MemoryTracker& tracker_;
    AdamWConfig adam_;
    DType pdt_;
    int n_, rank_;
    std::vector<std::uint64_t> padded_;
    std::vector<Unit> units_;
    std::vector<GatherEvent> schedule_;
    std::size_t pos_ = 0;
    bool accumulate_ = false; // stage 2-3: add this micro-batch's shard to the previous ones
    LossScaler scaler_;
    int step_ = 0;
    std::uint64_t host_to_device_ = 0, device_to_host_ = 0;
};

} // namespace shardlab
