// ZeroEngine: allocation by stage, the UnitParams hooks, and the optimizer step.
#include "optim/zero_engine.h"

#include "core/error.h"
#include "core/heap_trim.h"
#include "optim/exact_sum.h"
#include "optim/unit_shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace shardlab {

namespace {
// Stage 0 keeps whole units on every rank: the groups do not apply (a plain world all-reduce).
Communicator& shard_comm(const ZeroGroups& g, int stage) {
    return stage >= 1 && g.shard ? *g.shard : g.world;
}
Communicator* replicate_comm(const ZeroGroups& g, int stage) {
    return stage >= 1 && g.shard && g.replicate && g.replicate->size() > 1 ? g.replicate : nullptr;
}
} // namespace

ZeroEngine::ZeroEngine(const ParamLayout& layout, const ZeroOptions& options, ZeroGroups groups,
                       DeviceContext& context, Ops& ops, Updater& updater,
                       const InitialValues& init)
    : layout_(layout), o_(options), world_(groups.world), comm_(shard_comm(groups, options.stage)),
      replicate_(replicate_comm(groups, options.stage)),
      secondary_(options.stage == 3 ? groups.secondary : nullptr), ctx_(context), ops_(ops),
      updater_(updater), policy_(stage_policy(options.stage)), pdt_(param_dtype(options.precision)),
      n_(comm_.size()), rank_(comm_.rank()),
      schedule_(step_schedule(int(layout.num_units()) - 2, layout.tied_head())),
      scaler_(options.precision == Precision::fp16 ? LossScaler(options.loss_scale)
                                                   : LossScaler::fixed()) {
    check_stage(o_.stage, o_.prefetch);
    Stream& s = ctx_.compute();
    for (int u = 0; u < int(layout.num_units()); ++u) make_unit(u, init);
    release_free_heap(); // the last unit's staging
    scalars_ = ctx_.tracker().allocate(2 * sizeof(float), Category::workspace, s);
    if (reproducible()) allocate_exact_state();
    comm_.stream().wait(s.record()); // the first gathers read the parameters written here
}

// Unit u made on this rank: its values drawn (or read) for the range it holds, the parameters
// uploaded in their dtype, the gradient (and hpZ's secondary shard) allocated, and the owned
// range handed to the updater.
void ZeroEngine::make_unit(int u, const InitialValues& init) {
    Stream& s = ctx_.compute();
    MemoryTracker& tracker = ctx_.tracker();
    const std::size_t pb = dtype_size(pdt_);
    // The previous unit's staging, freed, goes back to the system rather than stay resident
    // between the blocks the arenas reserve (core/heap_trim.h): init holds what it declares.
    release_free_heap();
    padded_.push_back(padded_numel(layout_.units()[std::size_t(u)].numel, n_));
    const std::uint64_t P = padded_[std::size_t(u)], own = owned_count(u), off = owned_offset(u);
    const std::uint64_t numel = layout_.units()[std::size_t(u)].numel;
    // What this rank holds of the unit: [from, from + held); padding stays zero forever (no
    // gradient reaches it). Made and released unit by unit: never the whole model at once.
    const bool sharded_params = policy_.shards_parameters;
    const std::uint64_t from = sharded_params ? off : 0, held = sharded_params ? own : P;
    // Host staging while the unit is made, exactly (what the tracker explains a rank's RSS
    // with): the fp32 values for the unit's whole making, and while the parameters are
    // uploaded their converted copy. The copies run in stream order and are waited for, so no
    // stream keeps a copy of its own (Stream::upload would) and the updater copies the owned
    // range straight from `values`.
    const HostStaging staging(tracker, held * 4);
    std::vector<float> values(held, 0.0f);
    if (from < numel) init(u, from, std::min(numel, from + held) - from, values.data());
    Unit x;
    x.params = tracker.allocate(held * pb, Category::params, s);
    {
        const HostStaging converted_staging(tracker, held * pb);
        std::vector<char> converted(held * pb);
        convert(values.data(), DType::f32, converted.data(), pdt_, held);
        s.memcpy(x.params.data(), converted.data(), held * pb);
        s.synchronize();
    }
    if (secondary_) { // filled by the unit's first gather of each micro-batch
        check(P % std::uint64_t(secondary_->size()) == 0,
              "internal: a secondary shard group must divide the shard group");
        x.secondary = tracker.allocate(P / secondary_->size() * pb, Category::params, s);
    }
    const std::uint64_t grads = policy_.shards_gradients ? own : P;
    x.grads = tracker.allocate(grads * pb, Category::grads, s);
    ops_.fill(s, flat(x.grads, 0, grads), 0.0f);
    if (reproducible()) {
        x.exact = tracker.allocate(grads * 8, Category::grads, s);
        ops_.fill(s, flat_i64(x.exact, 0, grads), 0.0f);
    }
    units_.push_back(std::move(x));
    updater_.add(owned(u), values.data() + (off - from));
    s.synchronize(); // the unit's copies are done before `values` goes: one unit staged
}

// --reproducible's state: each unit's gradient maximum and fixed-point exponent, and at stages 2-3
// the int64 full gradients of one sequence.
void ZeroEngine::allocate_exact_state() {
    Stream& s = ctx_.compute();
    MemoryTracker& tracker = ctx_.tracker();
    const std::size_t U = units_.size();
    amax_ = tracker.allocate(U * sizeof(float), Category::workspace, s);
    ops_.fill(s, {amax_.data(), DType::f32, {std::int64_t(U)}, amax_.device()}, 0.0f);
    // Before any gradient was seen: room for |g| up to the loss scale (1 without one), times
    // the 2^kHeadroomBits every exponent leaves.
    for (std::size_t u = 0; u < U; ++u)
        exponent_.push_back(exact::exponent_for(scaler_.scale(), o_.exact_sequences));
    if (policy_.shards_gradients) // one sequence's gradient of a unit, in int64, two at a time
        for (Allocation& a : exact_full_)
            a = tracker.allocate(*std::max_element(padded_.begin(), padded_.end()) * 8,
                                 Category::grads, s);
}

Tensor ZeroEngine::flat(const Allocation& a, std::uint64_t offset, std::uint64_t count) const {
    return Tensor{a.data(), pdt_, {}, a.device()}.view(offset, {std::int64_t(count)});
}

std::uint64_t ZeroEngine::owned_offset(int unit) const {
    return policy_.shards_optimizer_state ? std::uint64_t(rank_) * (padded_[unit] / n_) : 0;
}
std::uint64_t ZeroEngine::owned_count(int unit) const {
    return policy_.shards_optimizer_state ? padded_[unit] / n_ : padded_[unit];
}

// The owned range's gradient and parameters: stages 0 and 1 keep whole units, in which the owned
// range starts at the owned offset; stage 2 keeps the gradient's shard and stage 3 both shards.
OwnedShard ZeroEngine::owned(int unit) const {
    const Unit& x = units_[unit];
    const std::uint64_t off = owned_offset(unit), own = owned_count(unit);
    return {&layout_.units()[unit].params, off,
            flat(x.grads, policy_.shards_gradients ? 0 : off, own),
            flat(x.params, policy_.shards_parameters ? 0 : off, own)};
}

float ZeroEngine::grad_scale() const {
    return scaler_.scale();
}

void ZeroEngine::wait_for_comm(const EventPtr& done) {
    Stream& s = ctx_.compute();
    const EventPtr before = s.record();
    s.wait(done ? done : comm_.stream().record());
    comm_waits_.push_back({before, s.record()});
    fold_comm_waits();
}

// Adds up the waits the compute stream has already passed, so the list stays short however long
// nobody asks for the total.
void ZeroEngine::fold_comm_waits() {
    while (!comm_waits_.empty() && comm_waits_.front().after->query()) {
        exposed_seconds_ += comm_waits_.front().after->seconds_since(*comm_waits_.front().before);
        comm_waits_.pop_front();
    }
}

double ZeroEngine::take_exposed_comm_seconds() {
    ctx_.compute().synchronize();
    fold_comm_waits();
    return std::exchange(exposed_seconds_, 0.0);
}

void ZeroEngine::begin_micro_batch(bool accumulate) {
    pos_ = 0;
    accumulate_ = accumulate;
    for (Unit& x : units_) x.gathered_once = false; // hpZ: the update changed the parameters
    // A forward-only pass (validation, sampling) stops before the backward and leaves the units
    // it prefetched for it gathered: a micro-batch starts with nothing gathered.
    release_gathered();
    release_retiring();
}

// --- parameters: gather -> compute -> release ----------------------------------------------

void ZeroEngine::expect(int unit, UnitUse use) {
    static constexpr const char* kUse[] = {"acquired", "released", "reduced"};
    check(pos_ < schedule_.size() && schedule_[pos_].unit == unit && schedule_[pos_].use == use,
          fmt::format("internal: unit {} {} out of the gather schedule (position {})", unit,
                      kUse[int(use)], pos_));
}

// A gather starts once the compute stream has let go of the units released before it — so at
// most `prefetch` units are gathered ahead in time, not just in the host's order of calls (the
// host runs far ahead of the streams): ZeRO-3's memory stays what the schedule says.
void ZeroEngine::gather(int unit) {
    Unit& x = units_[unit];
    if (x.gathered.data()) return; // live already (prefetched)
    if (last_release_) comm_.stream().wait(last_release_);
    x.gathered = ctx_.tracker().allocate(padded_[unit] * dtype_size(pdt_), Category::comm_buffers,
                                         comm_.stream());
    const std::size_t pb = dtype_size(pdt_);
    if (secondary_ && x.gathered_once) { // hpZ: inside the node, from the secondary shards
        secondary_->label_next("gather unit " + layout_.units()[unit].name + " (secondary)");
        secondary_->all_gather(x.secondary.data(), x.gathered.data(), padded_[unit], pdt_);
    } else {
        comm_.label_next("gather unit " + layout_.units()[unit].name);
        comm_.all_gather(x.params.data(), x.gathered.data(), padded_[unit], pdt_);
    }
    if (secondary_ && !x.gathered_once) { // keep this rank's node-local slice for later gathers
        const std::uint64_t k = padded_[unit] / secondary_->size();
        comm_.stream().memcpy(x.secondary.data(),
                              x.gathered.as<char>() + secondary_->rank() * k * pb, k * pb);
        x.gathered_once = true;
    }
    x.gathered_at = comm_.stream().record();
}

const void* ZeroEngine::acquire(int unit) {
    if (!policy_.shards_parameters) return units_[unit].params.data();
    expect(unit, UnitUse::acquire);
    gather(unit);
    for (int u : upcoming_units(schedule_, pos_, o_.prefetch)) gather(u); // ahead, on comm
    ++pos_;
    wait_for_comm(units_[unit].gathered_at); // not for the prefetches behind it
    return units_[unit].gathered.data();
}

void ZeroEngine::release(int unit) {
    if (!policy_.shards_parameters) return;
    expect(unit, UnitUse::release);
    const auto next = upcoming_units(schedule_, pos_, o_.prefetch);
    ++pos_;
    if (std::find(next.begin(), next.end(), unit) == next.end()) {
        units_[unit].gathered.release(ctx_.compute()); // after the compute that read it
        last_release_ = ctx_.compute().record();
    }
}

void ZeroEngine::release_gathered() {
    bool any = false;
    for (Unit& x : units_) any = any || x.gathered.data();
    if (!any) return;
    wait_for_comm(); // a prefetched unit's last use may be its gather
    for (Unit& x : units_) x.gathered.release(ctx_.compute());
    last_release_ = ctx_.compute().record();
}

// --- gradients ------------------------------------------------------------------------------

void* ZeroEngine::grads(int unit) {
    Unit& x = units_[unit];
    if (!policy_.shards_gradients) return x.grads.data();
    if (!x.grads_full.data()) { // first use in this backward
        // The memory may be a full gradient released on the comm stream: wait for that (timed)
        // rather than let the allocator insert an uncounted wait.
        if (grads_released_) wait_for_comm(grads_released_);
        x.grads_full = ctx_.tracker().allocate(padded_[unit] * dtype_size(pdt_), Category::grads,
                                               ctx_.compute());
        ops_.fill(ctx_.compute(), flat(x.grads_full, 0, padded_[unit]), 0.0f);
    }
    return x.grads_full.data();
}

// Stages 2-3: the unit's gradient is final once its backward has run: reduce-scatter it on the
// comm stream while the compute stream goes on with the next unit. Its full gradient is released
// at the next unit's grads_done, before that unit's reduce-scatter is enqueued: the memory then
// comes back once *this* reduce-scatter is over, for the unit after next — so no unit's backward
// ever waits for the reduce-scatter of the unit just before it.
void ZeroEngine::grads_done(int unit) {
    if (reproducible()) return exact_grads_done(unit);
    if (!policy_.shards_gradients) return;
    if (policy_.shards_parameters) { // the schedule counts reductions too
        expect(unit, UnitUse::reduce);
        ++pos_;
    }
    release_retiring();
    Unit& x = units_[unit];
    const std::uint64_t own = owned_count(unit), P = padded_[unit];
    Stream& cs = comm_.stream();
    cs.wait(ctx_.compute().record());
    const Tensor mine = flat(x.grads_full, owned_offset(unit), own);
    comm_.label_next("gradients of unit " + layout_.units()[unit].name);
    comm_.reduce_scatter(x.grads_full.data(), mine.data, P, pdt_, ReduceOp::avg); // in place
    reduce_across_replicas(mine.data, own, layout_.units()[unit].name, pdt_, ReduceOp::avg);
    if (accumulate_)
        ops_.accumulate(cs, flat(x.grads, 0, own), mine);
    else
        cs.memcpy(x.grads.data(), mine.data, own * dtype_size(pdt_));
    retiring_ = unit;
}

// The same order at every stage (reduce-scatter in the group, then this all-reduce of the shard),
// so stages 1-3 stay bitwise equal within a layout. Every replica then holds the same bits: the
// ring finishes each element on one rank and copies it.
void ZeroEngine::reduce_across_replicas(void* shard, std::uint64_t count, const std::string& unit,
                                        DType t, ReduceOp op) {
    if (!replicate_) return;
    replicate_->label_next("gradients of unit " + unit + " across replicas");
    replicate_->all_reduce(shard, shard, count, t, op);
}

void ZeroEngine::release_retiring() {
    if (retiring_ < 0) return;
    units_[retiring_].grads_full.release(comm_.stream()); // after its reduce-scatter
    grads_released_ = comm_.stream().record();
    retiring_ = -1;
}

// --- the step -------------------------------------------------------------------------------

// Stages 0 and 1 reduce every unit's gradient now; stages 2 and 3 did during backward.
void ZeroEngine::reduce_gradients() {
    comm_.stream().wait(ctx_.compute().record());
    for (std::size_t u = 0; u < units_.size(); ++u) {
        Unit& x = units_[u];
        comm_.label_next("gradients of unit " + layout_.units()[u].name);
        if (policy_.reduction() == GradientReduction::all_reduce)
            comm_.all_reduce(x.grads.data(), x.grads.data(), padded_[u], pdt_, ReduceOp::avg);
        if (policy_.reduction() == GradientReduction::reduce_scatter) {
            comm_.reduce_scatter(x.grads.data(), owned(int(u)).grads.data, padded_[u], pdt_,
                                 ReduceOp::avg);
            reduce_across_replicas(owned(int(u)).grads.data, owned_count(int(u)),
                                   layout_.units()[u].name, pdt_, ReduceOp::avg);
        }
    }
    release_retiring();
    wait_for_comm();
}

// Over this rank's shard range in every stage (even at stage 0, where the whole reduced gradient
// is local), so the partial sums — and their ring sum — are the same bits whatever the stage.
// Hybrid: summed over the shard group only — the replicas hold the same shards, so the group's
// sum is already the whole world's gradient norm (counting every replica would count it N/S
// times), and every group computes the same bits (same shards, same ring order).
float ZeroEngine::global_squared_norm() {
    std::vector<Tensor> parts;
    for (std::size_t u = 0; u < units_.size(); ++u) {
        const std::uint64_t shard = padded_[u] / n_;
        parts.push_back(flat(units_[u].grads,
                             policy_.shards_gradients ? 0 : std::uint64_t(rank_) * shard, shard));
    }
    float* sq = scalars_.as<float>();
    ops_.squared_norm(ctx_.compute(), parts, sq);
    comm_.stream().wait(ctx_.compute().record());
    comm_.label_next("gradient norm");
    comm_.all_reduce(sq, sq, 1, DType::f32, ReduceOp::sum);
    wait_for_comm();
    float value = 0;
    ctx_.compute().memcpy(&value, sq, sizeof(float));
    ctx_.compute().synchronize();
    return value;
}

// After an update: stages 1 and 2 all-gather the new shards into the full parameters; at stage 3
// the next gathers read the shards; the compute stream continues once the parameters are in place.
void ZeroEngine::publish(const EventPtr& updated) {
    Stream& cs = comm_.stream();
    cs.wait(updated);
    if (policy_.gathers_after_update())
        for (std::size_t u = 0; u < units_.size(); ++u) {
            comm_.label_next("updated unit " + layout_.units()[u].name);
            comm_.all_gather(owned(int(u)).params.data, units_[u].params.data(), padded_[u],
                             pdt_); // in place
        }
    ctx_.compute().wait(updated);
    wait_for_comm();
}

StepResult ZeroEngine::step(float lr) {
    if (reproducible()) return exact_step(lr);
    reduce_gradients();
    StepResult r;
    update(r, global_squared_norm(), lr);
    clear_full_gradients();
    return r;
}

// Stages 0-1 keep full-unit gradients across the step; the next step accumulates from zero.
void ZeroEngine::clear_full_gradients() {
    if (policy_.shards_gradients) return;
    for (std::size_t u = 0; u < units_.size(); ++u)
        ops_.fill(ctx_.compute(), flat(units_[u].grads, 0, padded_[u]), 0.0f);
}

// Clips and updates from the squared norm of the (scaled) gradient. An Inf or NaN anywhere makes
// the all-reduced squared norm Inf or NaN — the same value on every rank — so every rank skips
// alike without another message.
void ZeroEngine::update(StepResult& r, double sq, float lr) {
    r.loss_scale = scaler_.scale();
    r.grad_norm = std::sqrt(sq) / r.loss_scale;
    r.skipped = !scaler_.update(!std::isfinite(sq));
    if (r.skipped) return;
    ++step_;
    const double clip = (o_.grad_clip > 0 && r.grad_norm > o_.grad_clip)
                            ? o_.grad_clip / (r.grad_norm + 1e-6)
                            : 1.0;
    publish(updater_.update(ctx_.compute().record(), lr, step_, float(clip / r.loss_scale)));
}

double ZeroEngine::average(double value) {
    release_gathered(); // (a forward-only pass may have left units gathered)
    float v = float(value);
    float* slot = scalars_.as<float>() + 1;
    Stream& cs = comm_.stream();
    cs.wait(ctx_.compute().record()); // the slot's previous use is over
    cs.upload(slot, &v, sizeof(float));
    world_.label_next("mean loss");
    world_.all_reduce(slot, slot, 1, DType::f32, ReduceOp::avg);
    wait_for_comm();
    ctx_.compute().memcpy(&v, slot, sizeof(float));
    ctx_.compute().synchronize();
    return v;
}

// --- checkpoints and consolidation ----------------------------------------------------------

void ZeroEngine::for_each_consolidated_piece(
    int u, const std::function<void(std::uint64_t, const float*, std::size_t)>& fn,
    std::size_t piece_elems) {
    const std::uint64_t numel = layout_.units()[u].numel;
    release_free_heap(); // the previous unit's staging, freed, is not kept resident (as at init)
    // Host staging: the owned master read back (an fp32 vector), then, when sharded, the comm
    // stream's copy of it (Stream::upload); then a piece at a time (to_host_f32 reads fp32
    // straight into the piece's vector).
    const std::uint64_t own = owned_count(u);
    std::optional<HostStaging> staging;
    staging.emplace(ctx_.tracker(), own * 4 + (policy_.shards_optimizer_state ? own * 4 : 0));
    std::vector<float> master = updater_.read_master(u);
    if (!policy_.shards_optimizer_state) { // every rank holds the whole unit already
        for (std::uint64_t lo = 0; lo < numel; lo += piece_elems)
            fn(lo, master.data() + lo, std::min<std::uint64_t>(piece_elems, numel - lo));
        return;
    }
    // Gather every rank's shard of the fp32 master, then hand it over a piece at a time.
    Stream& cs = comm_.stream();
    const std::uint64_t shard = padded_[u] / n_;
    Allocation mine = ctx_.tracker().allocate(shard * 4, Category::workspace, cs);
    cs.upload(mine.data(), master.data(), shard * 4);
    cs.synchronize();
    // The host copy of the shard goes before the gather, and back to the system: glibc would
    // keep its pages resident beside the gathered unit, no longer declared.
    master = {};
    staging.reset();
    release_free_heap();
    // Reserved once the staging is gone, as it is first written then: reserved beside the
    // staging it was counted with bytes never resident together (GPT-2 N=1 end: -4.5%).
    Allocation all = ctx_.tracker().allocate(padded_[u] * 4, Category::workspace, cs);
    comm_.label_next("consolidating unit " + layout_.units()[u].name);
    comm_.all_gather(mine.data(), all.data(), padded_[u], DType::f32);
    for (std::uint64_t lo = 0; lo < numel; lo += piece_elems) {
        const std::size_t n = std::min<std::uint64_t>(piece_elems, numel - lo);
        const HostStaging piece_staging(ctx_.tracker(), n * 4);
        const std::vector<float> values =
            to_host_f32(cs, {all.as<float>() + lo, DType::f32, {std::int64_t(n)}, all.device()});
        fn(lo, values.data(), n);
    }
}

std::vector<float> ZeroEngine::consolidated_unit(int u) {
    std::vector<float> full;
    for_each_consolidated_piece(u, [&](std::uint64_t, const float* values, std::size_t n) {
        full.insert(full.end(), values, values + n);
    });
    return full;
}

std::vector<std::vector<float>> ZeroEngine::consolidated_master() {
    std::vector<std::vector<float>> out;
    for (std::size_t u = 0; u < units_.size(); ++u) out.push_back(consolidated_unit(int(u)));
    return out;
}

ZeroEngine::OwnedState ZeroEngine::save_owned() {
    OwnedState s;
    for (std::size_t u = 0; u < units_.size(); ++u) {
        ShardState st = updater_.read(int(u));
        s.master.push_back(std::move(st.master));
        s.m.push_back(std::move(st.m));
        s.v.push_back(std::move(st.v));
        s.offset.push_back(owned_offset(int(u)));
    }
    s.step = step_;
    s.loss_scale = scaler_.scale();
    s.good_steps = scaler_.good_steps();
    s.skipped = scaler_.skipped();
    s.exponents = exponent_;
    return s;
}

// Rebuilds the parameters from the master copy, as a step does.
void ZeroEngine::load_owned(const OwnedState& s) {
    check(s.master.size() == units_.size(),
          "checkpoint has the wrong number of units for this model");
    for (std::size_t u = 0; u < units_.size(); ++u) {
        const std::uint64_t own = owned_count(int(u));
        check(s.master[u].size() == own && s.m[u].size() == own && s.v[u].size() == own,
              fmt::format("checkpoint unit {} holds {} values, this run owns {}", u,
                          s.master[u].size(), own));
        updater_.write(int(u), {s.master[u], s.m[u], s.v[u]});
    }
    publish(updater_.publish());
    step_ = s.step;
    scaler_.restore(s.loss_scale, s.good_steps, s.skipped);
    if (reproducible() && !s.exponents.empty()) {
        check(s.exponents.size() == units_.size(),
              "checkpoint has the wrong number of fixed-point exponents for this model");
        exponent_ = s.exponents;
    }
    updater_.reset_counters(); // count the resumed run's steps only
}

} // namespace shardlab
