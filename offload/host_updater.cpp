// The tile pipeline: copy in (copy stream) -> update (host) -> copy out (copy stream).
#include "offload/host_updater.h"

#include "core/tracer.h"
#include "model/kernels/cpu/adamw.h"

#include <algorithm>
#include <cstring>

namespace shardlab {

HostUpdater::HostUpdater(DeviceContext& context, AdamWConfig config, DType param_dtype)
    : ctx_(context), cfg_(config), pdt_(param_dtype) {
    const std::size_t tile_bytes = kOffloadTile * dtype_size(pdt_);
    for (auto* slots : {staging_in_, staging_out_})
        for (int i = 0; i < 2; ++i)
            slots[i] =
                ctx_.tracker().allocate(tile_bytes, Category::workspace, ctx_.copy(), Arena::host);
    ctx_.copy().synchronize(); // the host writes the staging tiles itself
    // Written once now, so what the tiles reserve is resident from init on, as after the first
    // step (a rank's max RSS at init is then explained by the reserve: docs/MEMORY.md section 11).
    for (auto* slots : {staging_in_, staging_out_})
        for (int i = 0; i < 2; ++i) std::memset(slots[i].data(), 0, tile_bytes);
}

void HostUpdater::add(const OwnedShard& shard, const float* init) {
    const std::uint64_t n = shard.count();
    MemoryTracker& t = ctx_.tracker();
    Stream& copy = ctx_.copy();
    Unit u{shard, t.allocate(n * 4, Category::master, copy, Arena::host),
           t.allocate(n * 4, Category::optimizer, copy, Arena::host),
           t.allocate(n * 4, Category::optimizer, copy, Arena::host),
           t.allocate(n * 4, Category::grads, copy, Arena::host)};
    copy.synchronize(); // from here on the host itself works on these buffers
    std::memcpy(u.master.data(), init, n * 4);
    std::memset(u.m.data(), 0, n * 4);
    std::memset(u.v.data(), 0, n * 4);
    std::memset(u.grad.data(), 0, n * 4); // resident from init on, as the reserve says
    for (std::uint64_t b = 0; b < n; b += kOffloadTile)
        tiles_.push_back({units_.size(), b, std::min(kOffloadTile, n - b)});
    units_.push_back(std::move(u));
}

void HostUpdater::bring_gradient(const Tile& t, void* staging) {
    const std::size_t es = dtype_size(pdt_);
    const Tensor& grads = units_[t.unit].shard.grads;
    const TraceScope span(ctx_.tracer(), ctx_.copy(), "gradient tile to host", "copy",
                          {{"bytes", t.count * es}});
    ctx_.copy().memcpy(staging, grads.view(t.begin, {}).data, t.count * es);
    device_to_host_ += t.count * es;
}

// AdamW on one tile, tensor segment by tensor segment (the weight decay differs per tensor).
void HostUpdater::update_tile(const Tile& t, const float* grad_tile, float lr, int step,
                              float grad_scale) {
    Unit& u = units_[t.unit];
    for (const ShardSegment& seg : shard_segments(u.shard)) {
        const std::uint64_t lo = std::max(seg.begin, t.begin);
        const std::uint64_t hi = std::min(seg.begin + seg.count, t.begin + t.count);
        if (lo >= hi) continue;
        cpu::adamw(u.master.as<float>() + lo, u.m.as<float>() + lo, u.v.as<float>() + lo,
                   grad_tile + (lo - t.begin), DType::f32, hi - lo,
                   adamw_step(cfg_, lr, step, seg.decay, grad_scale));
    }
}

// The tile's master values rounded to the parameter dtype, then to the device.
void HostUpdater::send_parameters(const Tile& t, void* staging) {
    const Unit& u = units_[t.unit];
    const std::size_t es = dtype_size(pdt_);
    convert(u.master.as<float>() + t.begin, DType::f32, staging, pdt_, t.count);
    const TraceScope span(ctx_.tracer(), ctx_.copy(), "parameter tile to device", "copy",
                          {{"bytes", t.count * es}});
    ctx_.copy().memcpy(u.shard.params.view(t.begin, {}).data, staging, t.count * es);
    host_to_device_ += t.count * es;
}

EventPtr HostUpdater::update(const EventPtr& grads_ready, float lr, int step, float grad_scale) {
    Stream& copy = ctx_.copy();
    copy.wait(grads_ready);
    const std::size_t n = tiles_.size();
    std::vector<EventPtr> arrived(n), sent(n);
    for (std::size_t k = 0; k < std::min<std::size_t>(2, n); ++k) {
        bring_gradient(tiles_[k], staging_in_[k % 2].data());
        arrived[k] = copy.record();
    }
    for (std::size_t k = 0; k < n; ++k) {
        const Tile& t = tiles_[k];
        float* grad = units_[t.unit].grad.as<float>() + t.begin;
        arrived[k]->synchronize();
        Tracer* tracer = ctx_.tracer();
        const Tracer::SpanId span =
            tracer ? tracer->host_begin("AdamW tile", "host", {{"elements", t.count}})
                   : Tracer::kNone;
        convert(staging_in_[k % 2].data(), pdt_, grad, DType::f32, t.count); // widened on arrival
        if (k + 2 < n) { // the staging tile is free again: bring tile k+2 into it
            bring_gradient(tiles_[k + 2], staging_in_[k % 2].data());
            arrived[k + 2] = copy.record();
        }
        update_tile(t, grad, lr, step, grad_scale);
        if (tracer) tracer->host_end(span);
        if (k >= 2) sent[k - 2]->synchronize(); // its staging tile is the one to reuse
        send_parameters(t, staging_out_[k % 2].data());
        sent[k] = copy.record();
    }
    return copy.record();
}

EventPtr HostUpdater::publish() {
    // After whatever the compute stream last wrote into the parameters (their initial values).
    ctx_.copy().wait(ctx_.compute().record());
    for (std::size_t k = 0; k < tiles_.size(); ++k) {
        send_parameters(tiles_[k], staging_out_[k % 2].data());
        ctx_.copy().synchronize(); // one tile at a time: this runs once, after a load
    }
    return ctx_.copy().record();
}

ShardState HostUpdater::read(int unit) {
    const Unit& u = units_[std::size_t(unit)];
    const std::uint64_t n = u.shard.count();
    auto copy = [n](const Allocation& a) {
        return std::vector<float>(a.as<float>(), a.as<float>() + n);
    };
    return {read_master(unit), copy(u.m), copy(u.v)};
}

std::vector<float> HostUpdater::read_master(int unit) {
    const Unit& u = units_[std::size_t(unit)];
    return std::vector<float>(u.master.as<float>(), u.master.as<float>() + u.shard.count());
}

void HostUpdater::write(int unit, const ShardState& state) {
    Unit& u = units_[std::size_t(unit)];
    const std::uint64_t n = u.shard.count();
    std::memcpy(u.master.data(), state.master.data(), n * 4);
    std::memcpy(u.m.data(), state.m.data(), n * 4);
    std::memcpy(u.v.data(), state.v.data(), n * 4);
}

} // namespace shardlab
