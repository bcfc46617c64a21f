// The update on the device: fp32 master (in mixed precision), m and v next to the parameters, and
// Ops::adamw on the compute stream — one call over every owned range's segments (the weight decay
// is a segment's), writing the rounded parameters back in the same pass.
#pragma once

#include "core/device_context.h"
#include "model/ops.h"
#include "optim/adamw.h"
#include "optim/updater.h"

namespace shardlab {

class DeviceUpdater : public Updater {
  public:
    // has_master: keep an fp32 master copy (mixed precision); otherwise the parameters (fp32)
    // are updated in place.
    DeviceUpdater(DeviceContext& context, Ops& ops, AdamWConfig config, bool has_master);

    void add(const OwnedShard& shard, const float* init) override;
    EventPtr update(const EventPtr& grads_ready, float lr, int step, float grad_scale) override;
    EventPtr publish() override;
    ShardState read(int unit) override;
    std::vector<float> read_master(int unit) override;
    void write(int unit, const ShardState& state) override;

  private:
    struct Unit {
        OwnedShard shard;
        Allocation master_mem, m, v; // master_mem stays empty without a master copy
        Tensor master() const;
    };
    Tensor fp32(const Allocation& a, std::uint64_t n) const;

    DeviceContext& ctx_;
    Ops& ops_;
    AdamWConfig cfg_;
    bool has_master_;
    std::vector<Unit> units_;
};

} // namespace shardlab
