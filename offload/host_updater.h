// Offload: the optimizer on the host. fp32 master weights, m and v — and an fp32 copy of the owned
// gradient — live in host memory (page-locked on a GPU), and every step runs a pipeline of tiles
// over the owned ranges: while the host applies AdamW to tile k, the copy stream brings tile k+1's
// gradient (in the parameters' dtype: 16-bit but under --precision fp32) over and takes tile k-1's
// new parameters back. Two staging tiles each way
// keep the host from overwriting what a copy still reads. It counts the bytes it moves.
#pragma once

#include "core/device_context.h"
#include "optim/adamw.h"
#include "optim/updater.h"

#include <cstdint>
#include <vector>

namespace shardlab {

// Elements per tile (64 Ki): a tile of fp32 master, m, v and gradient is 1 MiB, cache-sized.
constexpr std::uint64_t kOffloadTile = std::uint64_t(1) << 16;
// Host bytes of the staging tiles for parameters of `param_bytes` per element.
constexpr std::uint64_t offload_staging_bytes(std::uint64_t param_bytes) {
    return 4 * kOffloadTile * param_bytes;
}

class HostUpdater : public Updater {
  public:
    HostUpdater(DeviceContext& context, AdamWConfig config, DType param_dtype);

    void add(const OwnedShard& shard, const float* init) override;
    EventPtr update(const EventPtr& grads_ready, float lr, int step, float grad_scale) override;
    EventPtr publish() override;
    ShardState read(int unit) override;
    std::vector<float> read_master(int unit) override;
    void write(int unit, const ShardState& state) override;
    std::uint64_t device_to_host_bytes() const override { return device_to_host_; }
    std::uint64_t host_to_device_bytes() const override { return host_to_device_; }
    void reset_counters() override { device_to_host_ = host_to_device_ = 0; }

  private:
    struct Unit {
        OwnedShard shard;
        Allocation master, m, v, grad; // host, fp32, [count]
    };
    struct Tile {
        std::size_t unit;
        std::uint64_t begin, count; // within the unit's owned range
    };
    void bring_gradient(const Tile& t, void* staging);
    void update_tile(const Tile& t, const float* grad_tile, float lr, int step, float grad_scale);
    void send_parameters(const Tile& t, void* staging);

    DeviceContext& ctx_;
    AdamWConfig cfg_;
    DType pdt_;
    std::vector<Unit> units_;
    std::vector<Tile> tiles_; // every unit's owned range, cut into tiles, in order
    Allocation staging_in_[2], staging_out_[2];
    std::uint64_t device_to_host_ = 0, host_to_device_ = 0;
};

} // namespace shardlab
