// ZeroEngine: allocation by stage, the UnitParams hooks, and the optimizer step.
#include "optim/zero_engine.h"

#include "comm/reduce_kernels.h"
#include "core/error.h"
#include "plan/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace shardlab {

namespace {
char* at(const Allocation& a, std::uint64_t elements, DType t) {
    return a.as<char>() + elements * dtype_size(t);
}
} // namespace

ZeroEngine::ZeroEngine(const ParamLayout& layout, const ZeroOptions& options, Communicator& comm,
                       MemoryTracker& tracker, const std::vector<std::vector<float>>& init,
                       AdamWConfig adam)
    : layout_(layout), o_(options), comm_(comm), tracker_(tracker), adam_(adam),
      pdt_(param_dtype(options.precision)), n_(comm.size()), rank_(comm.rank()),
      schedule_(step_schedule(int(layout.num_units()) - 2)),
      scaler_(options.precision == Precision::fp16 ? options.loss_scale : 1.0f) {
    if (o_.stage < 0 || o_.stage > 3)
        throw UsageError(fmt::format("--zero {} is not a ZeRO stage; use 0, 1, 2 or 3", o_.stage));
    if (o_.prefetch < 0 || (o_.prefetch > 0 && o_.stage != 3))
        throw UsageError("--prefetch applies to ZeRO-3 only (and must be >= 0)");
    const Arena state_arena = o_.offload ? Arena::host : Arena::device;
    const std::size_t pb = dtype_size(pdt_);
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        padded_.push_back(padded_numel(layout.units()[u].numel, n_));
        const std::uint64_t P = padded_[u], own = owned_count(int(u)), off = owned_offset(int(u));
        std::vector<float> full(P, 0.0f); // padding stays zero forever: no gradient reaches it
        std::copy(init[u].begin(), init[u].end(), full.begin());
        Unit x;
        if (o_.stage == 3) {
            x.params = tracker.allocate(own * pb, Category::params);
            convert(full.data() + off, DType::f32, x.params.data(), pdt_, own);
            x.grads = tracker.allocate(own * pb, Category::grads);
        } else {
            x.params = tracker.allocate(P * pb, Category::params);
            convert(full.data(), DType::f32, x.params.data(), pdt_, P);
            x.grads = tracker.allocate((o_.stage <= 1 ? P : own) * pb, Category::grads);
        }
        std::memset(x.grads.data(), 0, x.grads.bytes());
        if (has_master()) {
            x.master = tracker.allocate(own * 4, Category::master, state_arena);
            std::memcpy(x.master.data(), full.data() + off, own * 4);
        }
        x.m = tracker.allocate(own * 4, Category::optimizer, state_arena);
        x.v = tracker.allocate(own * 4, Category::optimizer, state_arena);
        std::memset(x.m.data(), 0, own * 4);
        std::memset(x.v.data(), 0, own * 4);
        if (o_.offload) x.host_grad = tracker.allocate(own * 4, Category::grads, Arena::host);
        units_.push_back(std::move(x));
    }
    // The ring reduce-scatter keeps two chunks of the largest unit (and of the one-float
    // all-reduces); allocated now, as plan/memory_plan.cpp assumes.
    if (n_ > 1) {
        std::size_t scratch = 2 * 4;
        for (auto P : padded_) scratch = std::max<std::size_t>(scratch, 2 * (P / n_) * pb);
        comm.reserve_scratch(scratch);
    }
}

bool ZeroEngine::has_master() const {
    return o_.offload || o_.precision != Precision::fp32;
}

std::uint64_t ZeroEngine::owned_offset(int unit) const {
    return o_.stage == 0 ? 0 : std::uint64_t(rank_) * (padded_[unit] / n_);
}
std::uint64_t ZeroEngine::owned_count(int unit) const {
    return o_.stage == 0 ? padded_[unit] : padded_[unit] / n_;
}

float ZeroEngine::grad_scale() const {
    return scaler_.scale();
}

void ZeroEngine::begin_micro_batch(bool accumulate) {
    pos_ = 0;
    accumulate_ = accumulate;
    // A forward-only pass (validation, sampling) stops before the backward and leaves the unit it
    // prefetched for it gathered: a micro-batch starts with nothing gathered.
    for (Unit& x : units_) x.gathered.release();
}

// --- parameters: gather -> compute -> release ----------------------------------------------

void ZeroEngine::gather(int unit) {
    Unit& x = units_[unit];
    if (x.gathered.data()) return; // live already (prefetched)
    x.gathered = tracker_.allocate(padded_[unit] * dtype_size(pdt_), Category::comm_buffers);
    comm_.all_gather(x.params.data(), x.gathered.data(), padded_[unit], pdt_);
}

const void* ZeroEngine::acquire(int unit) {
    if (o_.stage < 3) return units_[unit].params.data();
    check(pos_ < schedule_.size() && schedule_[pos_].unit == unit && schedule_[pos_].acquire,
          fmt::format("internal: unit {} acquired out of the gather schedule (position {})", unit,
                      pos_));
    gather(unit);
    for (int u : upcoming_units(schedule_, pos_, o_.prefetch)) gather(u);
    ++pos_;
    return units_[unit].gathered.data();
}

void ZeroEngine::release(int unit) {
    if (o_.stage < 3) return;
    check(pos_ < schedule_.size() && schedule_[pos_].unit == unit && !schedule_[pos_].acquire,
          fmt::format("internal: unit {} released out of the gather schedule (position {})", unit,
                      pos_));
    const auto next = upcoming_units(schedule_, pos_, o_.prefetch);
    ++pos_;
    if (std::find(next.begin(), next.end(), unit) == next.end()) units_[unit].gathered.release();
}

// --- gradients ------------------------------------------------------------------------------

void* ZeroEngine::grads(int unit) {
    Unit& x = units_[unit];
    if (o_.stage <= 1) return x.grads.data();
    if (!x.grads_full.data()) { // first use in this backward
        x.grads_full = tracker_.allocate(padded_[unit] * dtype_size(pdt_), Category::grads);
        std::memset(x.grads_full.data(), 0, x.grads_full.bytes());
    }
    return x.grads_full.data();
}

void ZeroEngine::grads_done(int unit) {
    if (o_.stage <= 1) return;
    Unit& x = units_[unit];
    const std::uint64_t own = owned_count(unit);
    char* mine = at(x.grads_full, owned_offset(unit), pdt_);
    comm_.reduce_scatter(x.grads_full.data(), mine, padded_[unit], pdt_, ReduceOp::avg); // in place
    if (accumulate_)
        reduce_add(x.grads.data(), x.grads.data(), mine, own, pdt_, 1.0f);
    else
        std::memcpy(x.grads.data(), mine, own * dtype_size(pdt_));
    x.grads_full.release();
}

void* ZeroEngine::owned_grad(int unit) {
    // Stage 0 and 1 keep the whole unit's gradient; the owned part starts at the owned offset.
    return o_.stage <= 1 ? at(units_[unit].grads, owned_offset(unit), pdt_)
                         : units_[unit].grads.data();
}

// --- the step -------------------------------------------------------------------------------

double ZeroEngine::local_sq_norm() {
    // Over this rank's shard range in every stage, so the partial sums — and their ring sum —
    // are the same bits whatever the stage.
    double sum = 0;
    for (std::size_t u = 0; u < units_.size(); ++u) {
        const std::uint64_t shard = padded_[u] / n_;
        const char* g = o_.stage <= 1 ? at(units_[u].grads, std::uint64_t(rank_) * shard, pdt_)
                                      : units_[u].grads.as<char>();
        for (std::uint64_t i = 0; i < shard; ++i) {
            const double v = load_as_f32(g, pdt_, i);
            sum += v * v;
        }
    }
    return sum;
}

double ZeroEngine::average(double value) {
    float v = float(value);
    comm_.all_reduce(&v, &v, 1, DType::f32, ReduceOp::avg);
    return v;
}

// Tile by tile over the owned range: the gradient tile comes to the host (offload), AdamW
// updates the parameters inside it (decay on 2-D weights only; padding is never updated), and
// the tile's 16-bit parameters go back — three passes while the tile is in cache. (The CUDA
// backend overlaps the two copies with the update on copy streams; here they are synchronous.)
void ZeroEngine::update_unit(int unit, float lr, float scale) {
    constexpr std::uint64_t kTile = 1 << 16;
    Unit& x = units_[unit];
    const std::uint64_t off = owned_offset(unit), own = owned_count(unit);
    const std::size_t es = dtype_size(pdt_);
    const char* grad = static_cast<const char*>(owned_grad(unit));
    char* params = o_.stage == 3 ? x.params.as<char>() : at(x.params, off, pdt_);
    float* w = master_ptr(unit);
    for (std::uint64_t t0 = 0; t0 < own; t0 += kTile) {
        const std::uint64_t n = std::min(kTile, own - t0);
        const void* g = grad + t0 * es;
        DType gt = pdt_;
        if (o_.offload) { // device -> host, widened to fp32 on arrival
            convert(g, pdt_, x.host_grad.as<float>() + t0, DType::f32, n);
            device_to_host_ += n * es;
            g = x.host_grad.as<float>() + t0;
            gt = DType::f32;
        }
        for (const ParamInfo& p : layout_.units()[unit].params) {
            const std::uint64_t lo = std::max<std::uint64_t>(p.offset, off + t0);
            const std::uint64_t hi = std::min<std::uint64_t>(p.offset + p.numel, off + t0 + n);
            if (lo >= hi) continue;
            const std::uint64_t i = lo - off; // index in the owned range
            adamw_update(w + i, x.m.as<float>() + i, x.v.as<float>() + i,
                         static_cast<const char*>(g) + (i - t0) * dtype_size(gt), gt, hi - lo,
                         adam_, lr, step_, p.decay, scale);
        }
        if (has_master()) { // round the master tile into the parameters (host -> device with
                            // offload)
            convert(w + t0, DType::f32, params + t0 * es, pdt_, n);
            if (o_.offload) host_to_device_ += n * es;
        }
    }
    if (o_.stage == 1 || o_.stage == 2)
        comm_.all_gather(params, x.params.data(), padded_[unit], pdt_); // in place
}

float* ZeroEngine::master_ptr(int unit) {
    Unit& x = units_[unit];
    if (has_master()) return x.master.as<float>();
    return reinterpret_cast<float*>(o_.stage == 3 ? x.params.as<char>()
                                                  : at(x.params, owned_offset(unit), pdt_));
}

// After a checkpoint is loaded: rebuild the parameters from the master copy, as a step does.
void ZeroEngine::publish_params(int unit) {
    Unit& x = units_[unit];
    const std::uint64_t own = owned_count(unit);
    char* mine = o_.stage == 3 ? x.params.as<char>() : at(x.params, owned_offset(unit), pdt_);
    if (has_master()) { // round the master copy to the parameter dtype (host -> device with
                        // offload)
        convert(x.master.data(), DType::f32, mine, pdt_, own);
        if (o_.offload) host_to_device_ += own * dtype_size(pdt_);
    }
    if (o_.stage == 1 || o_.stage == 2)
        comm_.all_gather(mine, x.params.data(), padded_[unit], pdt_); // in place
}

StepResult ZeroEngine::step(float lr) {
    for (std::size_t u = 0; u < units_.size(); ++u) { // stages 0 and 1 reduce at the step
        Unit& x = units_[u];
        if (o_.stage == 0)
            comm_.all_reduce(x.grads.data(), x.grads.data(), padded_[u], pdt_, ReduceOp::avg);
        if (o_.stage == 1)
            comm_.reduce_scatter(x.grads.data(), owned_grad(int(u)), padded_[u], pdt_,
                                 ReduceOp::avg);
    }
    float sq = float(local_sq_norm());
    comm_.all_reduce(&sq, &sq, 1, DType::f32, ReduceOp::sum);
    StepResult r;
    r.loss_scale = scaler_.scale();
    // fp16: an overflowed gradient makes the all-reduced squared norm Inf or NaN — the same value
    // on every rank — so every rank skips alike without another message.
    const bool overflow = o_.precision == Precision::fp16 && !std::isfinite(sq);
    r.grad_norm = std::sqrt(double(sq)) / r.loss_scale;
    r.skipped = !scaler_.update(overflow);
    if (!r.skipped) {
        ++step_;
        const double clip = (o_.grad_clip > 0 && r.grad_norm > o_.grad_clip)
                                ? o_.grad_clip / (r.grad_norm + 1e-6)
                                : 1.0;
        for (std::size_t u = 0; u < units_.size(); ++u)
            update_unit(int(u), lr, float(clip / r.loss_scale));
    }
    if (o_.stage <= 1)
        for (Unit& x : units_) std::memset(x.grads.data(), 0, x.grads.bytes());
    return r;
}

// --- checkpoints and consolidation ----------------------------------------------------------

std::vector<std::vector<float>> ZeroEngine::consolidated_master() {
    std::vector<std::vector<float>> out;
    for (std::size_t u = 0; u < units_.size(); ++u) {
        std::vector<float> full(padded_[u]);
        const float* mine = master_ptr(int(u));
        if (o_.stage == 0)
            std::memcpy(full.data(), mine, padded_[u] * 4);
        else
            comm_.all_gather(mine, full.data(), padded_[u], DType::f32);
        full.resize(layout_.units()[u].numel);
        out.push_back(std::move(full));
    }
    return out;
}

ZeroEngine::OwnedState ZeroEngine::save_owned() const {
    OwnedState s;
    for (std::size_t u = 0; u < units_.size(); ++u) {
        const std::uint64_t own = owned_count(int(u));
        const float* w = const_cast<ZeroEngine*>(this)->master_ptr(int(u));
        s.master.emplace_back(w, w + own);
        s.m.emplace_back(units_[u].m.as<float>(), units_[u].m.as<float>() + own);
        s.v.emplace_back(units_[u].v.as<float>(), units_[u].v.as<float>() + own);
    }
    s.step = step_;
    s.loss_scale = scaler_.scale();
    s.good_steps = scaler_.good_steps();
    s.skipped = scaler_.skipped();
    return s;
}

void ZeroEngine::load_owned(const OwnedState& s) {
    check(s.master.size() == units_.size(),
          "checkpoint has the wrong number of units for this model");
    for (std::size_t u = 0; u < units_.size(); ++u) {
        const std::uint64_t own = owned_count(int(u));
        check(s.master[u].size() == own && s.m[u].size() == own && s.v[u].size() == own,
              fmt::format("checkpoint unit {} holds {} values, this run owns {}", u,
                          s.master[u].size(), own));
        std::memcpy(master_ptr(int(u)), s.master[u].data(), own * 4);
        std::memcpy(units_[u].m.data(), s.m[u].data(), own * 4);
        std::memcpy(units_[u].v.data(), s.v[u].data(), own * 4);
        publish_params(int(u));
    }
    step_ = s.step;
    scaler_.restore(s.loss_scale, s.good_steps, s.skipped);
    host_to_device_ = device_to_host_ = 0; // count the resumed run's steps only
}

} // namespace shardlab
