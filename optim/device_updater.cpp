// AdamW over every unit's tensor segments, one Ops call an update, on the compute stream.
#include "optim/device_updater.h"

namespace shardlab {

DeviceUpdater::DeviceUpdater(DeviceContext& context, Ops& ops, AdamWConfig config, bool has_master)
    : ctx_(context), ops_(ops), cfg_(config), has_master_(has_master) {}

Tensor DeviceUpdater::fp32(const Allocation& a, std::uint64_t n) const {
    return {a.data(), DType::f32, {std::int64_t(n)}, a.device()};
}

Tensor DeviceUpdater::Unit::master() const {
    if (!master_mem.data()) return shard.params; // fp32 without a master copy
    return {master_mem.data(), DType::f32, {std::int64_t(shard.count())}, master_mem.device()};
}

void DeviceUpdater::add(const OwnedShard& shard, const float* init) {
    const std::uint64_t n = shard.count();
    Stream& s = ctx_.compute();
    MemoryTracker& t = ctx_.tracker();
    Unit u{shard, {}, {}, {}};
    if (has_master_) {
        u.master_mem = t.allocate(n * 4, Category::master, s);
        // Copied in stream order and waited for (init only): no stream's copy of `init` is
        // staged beside the caller's (which it declares, ZeroEngine).
        s.memcpy(u.master_mem.data(), init, n * 4);
        s.synchronize();
    }
    u.m = t.allocate(n * 4, Category::optimizer, s);
    u.v = t.allocate(n * 4, Category::optimizer, s);
    ops_.fill(s, fp32(u.m, n), 0.0f);
    ops_.fill(s, fp32(u.v, n), 0.0f);
    units_.push_back(std::move(u));
}

EventPtr DeviceUpdater::update(const EventPtr& grads_ready, float lr, int step, float grad_scale) {
    Stream& s = ctx_.compute();
    s.wait(grads_ready);
    std::vector<AdamWTensor> tensors; // every unit's segments: one call for the whole update
    for (const Unit& u : units_) {
        const Tensor master = u.master(), m = fp32(u.m, u.shard.count()),
                     v = fp32(u.v, u.shard.count());
        for (const ShardSegment& seg : shard_segments(u.shard)) {
            const Shape n{std::int64_t(seg.count)};
            tensors.push_back({master.view(seg.begin, n), m.view(seg.begin, n),
                               v.view(seg.begin, n), u.shard.grads.view(seg.begin, n),
                               has_master_ ? u.shard.params.view(seg.begin, n) : Tensor{},
                               adamw_step(cfg_, lr, step, seg.decay, grad_scale)});
        }
    }
    if (!tensors.empty()) ops_.adamw(s, tensors); // a rank may own only padding
    return s.record();
}

EventPtr DeviceUpdater::publish() {
    Stream& s = ctx_.compute();
    if (has_master_)
        for (const Unit& u : units_) ops_.convert(s, u.shard.params, u.master());
    return s.record();
}

ShardState DeviceUpdater::read(int unit) {
    const Unit& u = units_[std::size_t(unit)];
    Stream& s = ctx_.compute();
    return {read_master(unit), to_host_f32(s, fp32(u.m, u.shard.count())),
            to_host_f32(s, fp32(u.v, u.shard.count()))};
}

std::vector<float> DeviceUpdater::read_master(int unit) {
    return to_host_f32(ctx_.compute(), units_[std::size_t(unit)].master());
}

void DeviceUpdater::write(int unit, const ShardState& state) {
    const Unit& u = units_[std::size_t(unit)];
    Stream& s = ctx_.compute();
    upload_f32(s, u.master(), state.master.data());
    upload_f32(s, fp32(u.m, u.shard.count()), state.m.data());
    upload_f32(s, fp32(u.v, u.shard.count()), state.v.data());
}

} // namespace shardlab
