// Updater: the AdamW step over the shards one rank owns — on the device (optim/device_updater.h)
// or, with offload, on the host (offload/host_updater.h). The ZeRO engine hands it every unit's
// owned range once, then calls update() at each step. It holds the fp32 master weights (or, in
// fp32 training without offload, updates the parameters themselves), m and v.
#pragma once

#include "core/stream.h"
#include "core/tensor.h"
#include "model/param_layout.h"

#include <cstdint>
#include <vector>

namespace shardlab {

// One unit's owned range: where it sits in the padded unit, and its gradient and parameters (the
// parameter dtype, device memory; buffers that live as long as the engine).
struct OwnedShard {
    const std::vector<ParamInfo>* tensors = nullptr; // the unit's tensors (offsets in the unit)
    std::uint64_t offset = 0;                        // of the owned range in the padded unit
    Tensor grads, params;                            // [count]
    std::uint64_t count() const { return grads.numel(); }
};

// A stretch of an owned range covered by neighbouring tensors with the same weight-decay flag:
// [begin, begin + count) of the range, one AdamWTensor of the update's call (GPT-2's block: 9 for
// its 12 tensors, the biases and norms beside each other sharing one). Padding belongs to no
// tensor and is never updated: it ends a stretch.
struct ShardSegment {
    std::uint64_t begin, count;
    bool decay;
};
std::vector<ShardSegment> shard_segments(const OwnedShard& shard);

// A unit's owned optimizer state, as fp32 host vectors (checkpoints).
struct ShardState {
    std::vector<float> master, m, v;
};

class Updater {
  public:
    virtual ~Updater() = default;
    // Registers the next unit's owned range (units in order), with its initial fp32 values.
    virtual void add(const OwnedShard& shard, const float* init) = 0;
    // One AdamW step on every shard (gradients times grad_scale): starts once `grads_ready` has
    // completed; returns the event after which every shard's parameters hold the new values.
    virtual EventPtr update(const EventPtr& grads_ready, float lr, int step, float grad_scale) = 0;
    // Rewrites every shard's parameters from the master copy (after a checkpoint is loaded).
    virtual EventPtr publish() = 0;
    virtual ShardState read(int unit) = 0; // waits for the streams
    // The unit's master shard alone (the final weights need no m, v): read(unit).master, read
    // straight into the vector returned (no other host copy is staged beside it).
    virtual std::vector<float> read_master(int unit) = 0;
    virtual void write(int unit, const ShardState& state) = 0;
    // Bytes the updates moved between device and host (offload), since reset_counters().
    virtual std::uint64_t device_to_host_bytes() const { return 0; }
    virtual std::uint64_t host_to_device_bytes() const { return 0; }
    virtual void reset_counters() {}
};

} // namespace shardlab
