// ZeroEngine under --reproducible (optim/exact_sum.h): each sequence's gradient into int64 fixed
// point, summed exactly — locally, by the reduce-scatter or all-reduce the stage runs, across
// hybrid replicas — then divided by the global batch's sequences at the step. The norm and the
// loss are fixed-point sums too, so no bit depends on N, the stage or the split of the batch.
#include "core/error.h"
#include "model/kernels/fixed_point.h"
#include "optim/exact_sum.h"
#include "optim/zero_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace shardlab {

Tensor ZeroEngine::flat_i64(const Allocation& a, std::uint64_t offset, std::uint64_t count) const {
    return Tensor{a.data(), DType::i64, {}, a.device()}.view(offset, {std::int64_t(count)});
}

// The owned range's sum: inside the full buffer at stages 0-1, the whole shard at 2-3.
Tensor ZeroEngine::exact_owned(int unit) const {
    return flat_i64(units_[unit].exact, policy_.shards_gradients ? 0 : owned_offset(unit),
                    owned_count(unit));
}

// A unit's gradient of one sequence is final: into fixed point. Stages 0-1 add it to the unit's
// full sum and clear the gradient for the next sequence; stages 2-3 convert it into one of two
// full int64 buffers, reduce-scatter that (a sum: exact) and add the owned part to the shard —
// while the compute stream goes on with the next unit, as the default path does.
void ZeroEngine::exact_grads_done(int unit) {
    Unit& x = units_[unit];
    const std::uint64_t P = padded_[unit], own = owned_count(unit), off = owned_offset(unit);
    Stream& s = ctx_.compute();
    float* amax = amax_.as<float>() + unit;
    if (!policy_.shards_gradients) {
        ops_.fixed_accumulate(s, flat_i64(x.exact, 0, P), flat(x.grads, 0, P), exponent_[unit],
                              amax);
        ops_.fill(s, flat(x.grads, 0, P), 0.0f);
        return;
    }
    if (policy_.shards_parameters) { // the schedule counts reductions too
        expect(unit, UnitUse::reduce);
        ++pos_;
    }
    release_retiring();
    exact_slot_ ^= 1;
    if (exact_free_[exact_slot_]) wait_for_comm(exact_free_[exact_slot_]); // its last reduction
    const Allocation& full = exact_full_[exact_slot_];
    ops_.fill(s, flat_i64(full, 0, P), 0.0f);
    ops_.fixed_accumulate(s, flat_i64(full, 0, P), flat(x.grads_full, 0, P), exponent_[unit], amax);
    Stream& cs = comm_.stream();
    cs.wait(s.record());
    const Tensor mine = flat_i64(full, off, own);
    comm_.label_next("gradients of unit " + layout_.units()[unit].name);
    comm_.reduce_scatter(full.data(), mine.data, P, DType::i64, ReduceOp::sum); // in place
    reduce_across_replicas(mine.data, own, layout_.units()[unit].name, DType::i64, ReduceOp::sum);
    ops_.accumulate(cs, flat_i64(x.exact, 0, own), mine);
    exact_free_[exact_slot_] = cs.record();
    retiring_ = unit;
}

// Stages 0 and 1 sum every unit's fixed-point gradient now; stages 2 and 3 did during backward.
void ZeroEngine::reduce_exact() {
    comm_.stream().wait(ctx_.compute().record());
    for (std::size_t u = 0; u < units_.size(); ++u) {
        Unit& x = units_[u];
        const std::string label = "gradients of unit " + layout_.units()[u].name;
        if (policy_.reduction() == GradientReduction::all_reduce) {
            comm_.label_next(label);
            comm_.all_reduce(x.exact.data(), x.exact.data(), padded_[u], DType::i64, ReduceOp::sum);
        }
        if (policy_.reduction() == GradientReduction::reduce_scatter) {
            const Tensor mine = exact_owned(int(u));
            comm_.label_next(label);
            comm_.reduce_scatter(x.exact.data(), mine.data, padded_[u], DType::i64, ReduceOp::sum);
            reduce_across_replicas(mine.data, owned_count(int(u)), layout_.units()[u].name,
                                   DType::i64, ReduceOp::sum);
        }
    }
    release_retiring();
    wait_for_comm();
}

// Every unit's largest |gradient| of any sequence of the global batch: each rank's maxima
// all-gathered over the world, the maximum taken here (exact, so the same on every rank).
std::vector<float> ZeroEngine::global_maxima() {
    const std::size_t U = units_.size(), N = std::size_t(world_.size());
    Stream& cs = comm_.stream();
    Allocation all = ctx_.tracker().allocate(N * U * sizeof(float), Category::workspace, cs);
    cs.wait(ctx_.compute().record());
    world_.label_next("largest gradients");
    world_.all_gather(amax_.data(), all.data(), N * U, DType::f32);
    wait_for_comm();
    const std::vector<float> each = to_host_f32(
        ctx_.compute(), {all.as<float>(), DType::f32, {std::int64_t(N * U)}, all.device()});
    std::vector<float> amax(U, 0.0f);
    for (std::size_t r = 0; r < N; ++r)
        for (std::size_t u = 0; u < U; ++u) amax[u] = std::max(amax[u], each[r * U + u]);
    ops_.fill(ctx_.compute(), {amax_.data(), DType::f32, {std::int64_t(U)}, amax_.device()}, 0.0f);
    return amax;
}

// Sum of squares of the gradient, as global_squared_norm over the same shard ranges, but each
// unit's squares summed in fixed point (exactly, over the sharding ranks) and the units' sums
// added in unit order: the same bits however the ranks cut the units.
double ZeroEngine::exact_squared_norm(const std::vector<int>& f) {
    const std::size_t U = units_.size();
    Stream& s = ctx_.compute();
    Allocation sums = ctx_.tracker().allocate(U * 8, Category::workspace, s);
    ops_.fill(s, flat_i64(sums, 0, U), 0.0f);
    for (std::size_t u = 0; u < U; ++u) {
        const std::uint64_t shard = padded_[u] / n_;
        ops_.fixed_squares(s,
                           flat(units_[u].grads,
                                policy_.shards_gradients ? 0 : std::uint64_t(rank_) * shard, shard),
                           f[u], sums.as<std::int64_t>() + u);
    }
    comm_.stream().wait(s.record());
    comm_.label_next("gradient norm");
    comm_.all_reduce(sums.data(), sums.data(), U, DType::i64, ReduceOp::sum);
    wait_for_comm();
    std::vector<std::int64_t> q(U);
    s.memcpy(q.data(), sums.data(), U * 8);
    s.synchronize();
    double sq = 0;
    for (std::size_t u = 0; u < U; ++u) sq += fixed::from_fixed(q[u], f[u], 1.0);
    return sq;
}

void ZeroEngine::clear_exact() {
    for (std::size_t u = 0; u < units_.size(); ++u) {
        const std::uint64_t n = policy_.shards_gradients ? owned_count(int(u)) : padded_[u];
        ops_.fill(ctx_.compute(), flat_i64(units_[u].exact, 0, n), 0.0f);
    }
}

// The step: sums complete, the maxima agreed; an overflow redoes the step at the exponents the
// maxima call for, a non-finite gradient skips it (fp16's scaler backs off); otherwise each
// owned sum becomes the mean gradient in the parameters' dtype and the update runs as usual.
StepResult ZeroEngine::exact_step(float lr) {
    reduce_exact();
    const std::vector<float> amax = global_maxima();
    const std::uint64_t G = o_.exact_sequences;
    const bool finite =
        std::all_of(amax.begin(), amax.end(), [](float a) { return std::isfinite(a); });
    StepResult r;
    r.loss_scale = scaler_.scale();
    if (finite)
        for (std::size_t u = 0; u < amax.size(); ++u)
            if (exact::overflows(amax[u], exponent_[u], G)) {
                exponent_[u] = exact::exponent_for(amax[u], G);
                r.redo = true;
            }
    if (r.redo) {
        clear_exact();
        clear_full_gradients();
        return r;
    }
    double sq = INFINITY;
    if (finite) {
        for (std::size_t u = 0; u < units_.size(); ++u)
            ops_.fixed_to_float(ctx_.compute(), owned(int(u)).grads, exact_owned(int(u)),
                                exponent_[u], double(G));
        // The squares' exponent counts the unit's own elements, not its padded length: the
        // padding adds zeros, and padded_ follows N (a 2^14-element unit is 16386 long at N = 3,
        // one more bit, which moved the norm's last bits with the rank count).
        std::vector<int> f(amax.size());
        for (std::size_t u = 0; u < amax.size(); ++u)
            f[u] = exact::squares_exponent(amax[u], exponent_[u], layout_.units()[u].numel);
        sq = exact_squared_norm(f);
        for (std::size_t u = 0; u < amax.size(); ++u) // the next step's, from this one's maxima
            if (amax[u] > 0) exponent_[u] = exact::exponent_for(amax[u], G);
    } else { // skipped; the norm's message is still sent (every step moves the same bytes), over
             // gradients not converted this step, at an exponent that rounds each square to 0
        exact_squared_norm(std::vector<int>(amax.size(), -1000));
    }
    update(r, sq, lr);
    clear_exact();
    clear_full_gradients();
    return r;
}

// The values in fixed point at 2^-32 (a sequence's loss is far below 2^20), summed here and over
// the world as integers; a non-finite value is counted beside the sum and makes the mean NaN.
double ZeroEngine::exact_average(const std::vector<double>& values, std::uint64_t count) {
    release_gathered(); // (a forward-only pass may have left units gathered)
    std::int64_t mine[2] = {0, 0};
    for (double v : values) {
        if (std::isfinite(v))
            mine[0] += fixed::to_fixed(v, exact::kLossExponent);
        else
            ++mine[1];
    }
    Allocation slot = ctx_.tracker().allocate(sizeof mine, Category::workspace, comm_.stream());
    Stream& cs = comm_.stream();
    cs.wait(ctx_.compute().record());
    cs.upload(slot.data(), mine, sizeof mine);
    world_.label_next("mean loss");
    world_.all_reduce(slot.data(), slot.data(), 2, DType::i64, ReduceOp::sum);
    wait_for_comm();
    ctx_.compute().memcpy(mine, slot.data(), sizeof mine);
    ctx_.compute().synchronize();
    return mine[1] ? NAN : fixed::from_fixed(mine[0], exact::kLossExponent, double(count));
}

} // namespace shardlab
