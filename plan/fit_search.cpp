// plan --fit's search: enumerate, plan, keep what fits, time it, rank the families' best.
#include "plan/fit_search.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace shardlab {

namespace {

// How one configuration shards beyond its stage: flat, HSDP over each node, or ZeRO++ hpZ.
struct Sharding {
    int shard_group = 0, secondary_shard = 0;
};

std::vector<Sharding> shardings(const PlanOptions& base, int zero) {
    std::vector<Sharding> s{{}};
    const int per_node = base.nodes.uniform_ranks_per_node();
    if (base.nodes.nodes() < 2 || per_node < 1 || zero < 1) return s;
    s.push_back({per_node, 0});                // HSDP: ZeRO inside the node, replicas across nodes
    if (zero == 3) s.push_back({0, per_node}); // hpZ: backward's gathers stay in the node
    return s;
}

std::vector<CheckpointPolicy> checkpoints(const PlanModel& m) {
    std::vector<CheckpointPolicy> c{{0}, {1}};
    if (m.config.layers >= 4) c.push_back({2}); // every other block: half of none's activations
    return c;
}

// (micro-batch, grad-accum) pairs: the global batch's splits, or doubling micro-batches.
std::vector<std::pair<int, int>> batch_splits(const PlanOptions& base, const FitRequest& r) {
    std::vector<std::pair<int, int>> s;
    if (r.global_batch > 0) {
        if (r.global_batch % base.ranks != 0)
            throw UsageError(fmt::format("--global-batch {} does not divide over N = {} ranks; "
                                         "give a multiple of {}",
                                         r.global_batch, base.ranks, base.ranks));
        const int per_rank = r.global_batch / base.ranks;
        for (int mb = 1; mb <= per_rank; ++mb)
            if (per_rank % mb == 0) s.push_back({mb, per_rank / mb});
        return s;
    }
    for (int mb = 1; mb <= 1024; mb *= 2) s.push_back({mb, base.grad_accum});
    return s;
}

std::vector<int> prefetches(int zero) {
    return zero == 3 ? std::vector<int>{0, 1, 2} : std::vector<int>{0};
}

// The family a candidate belongs to: what a user decides; micro-batch and prefetch are tuning.
auto family(const PlanOptions& o) {
    return std::make_tuple(o.zero, o.offload, o.shard_group, o.secondary_shard, o.checkpoint.every);
}

// Faster first. Equal speed (to rounding): the larger micro-batch — beyond the sizes a profile
// timed (none in a built-in) the model prices every product size alike, and larger products run
// at least as fast on every machine met — then fewer device bytes.
bool better(const FitCandidate& a, const FitCandidate& b) {
    const double x = a.time.tokens_per_s, y = b.time.tokens_per_s;
    if (std::abs(x - y) > 1e-9 * std::max(x, y)) return x > y;
    if (a.plan.options.micro_batch != b.plan.options.micro_batch)
        return a.plan.options.micro_batch > b.plan.options.micro_batch;
    return a.plan.memory.device_total < b.plan.memory.device_total;
}

} // namespace

FitResult fit_search(const PlanModel& model, const PlanOptions& base, const MachineProfile& profile,
                     const FitRequest& request, int rank) {
    FitResult r;
    std::map<decltype(family(base)), FitCandidate> best;
    const std::vector<std::pair<int, int>> splits = batch_splits(base, request);
    PlanOptions o = base;
    o.gpu_bytes = 0; // the budget is applied here: no largest-micro-batch search per candidate
    // One rank has nothing to shard: stages 1-3 would only repeat stage 0 with more buffers.
    for (int zero = 0; zero <= (base.ranks > 1 ? 3 : 0); ++zero)
        for (bool offload : {false, true}) {
            if (offload && !base.master) continue; // offload keeps an fp32 master
            for (const Sharding& sh : shardings(base, zero))
                for (const CheckpointPolicy& ck : checkpoints(model))
                    for (int prefetch : prefetches(zero))
                        for (const auto& [mb, accum] : splits) {
                            o.zero = zero, o.offload = offload, o.checkpoint = ck;
                            o.shard_group = sh.shard_group, o.secondary_shard = sh.secondary_shard;
                            o.prefetch = prefetch, o.micro_batch = mb, o.grad_accum = accum;
                            Plan p = make_plan(model, o, rank);
                            ++r.searched;
                            if (!r.smallest ||
                                p.memory.device_total < r.smallest->memory.device_total)
                                r.smallest = p;
                            // Larger micro-batches only need more (activations grow with
                            // them; grad-accum holds nothing): the splits stop here.
                            if (p.memory.device_total > request.budget_bytes) break;
                            ++r.fitting;
                            FitCandidate c{p, predict_time(p, profile, rank), {}};
                            const auto key = family(o);
                            const auto it = best.find(key);
                            if (it == best.end() || better(c, it->second)) best[key] = c;
                        }
        }
    std::vector<FitCandidate> families;
    for (auto& [key, c] : best) families.push_back(std::move(c));
    std::sort(families.begin(), families.end(), better);
    // A place per speed the model can tell apart: a family within kFitTie of the place's first
    // joins it.
    for (FitCandidate& c : families) {
        const bool tied = !r.ranked.empty() &&
                          c.time.tokens_per_s >= r.ranked.back().time.tokens_per_s * (1 - kFitTie);
        if (tied)
            r.ranked.back().ties.push_back(std::move(c));
        else if (int(r.ranked.size()) < request.top)
            r.ranked.push_back(std::move(c));
    }
    // The listed ones again with the budget: their plans then carry fits and the largest
    // micro-batch, as `plan --gpu` would print them.
    auto with_budget = [&](FitCandidate& c) {
        PlanOptions t = c.plan.options;
        t.gpu_bytes = request.budget_bytes, t.gpu_name = base.gpu_name;
        c.plan = make_plan(model, t, rank);
    };
    for (FitCandidate& c : r.ranked) {
        with_budget(c);
        for (FitCandidate& t : c.ties) with_budget(t);
    }
    return r;
}

std::string describe_options(const PlanOptions& o) {
    std::string s = fmt::format("ZeRO-{}{}", o.zero, o.offload ? " + offload" : "");
    s += ", checkpoint " + checkpoint_name(o.checkpoint);
    s += fmt::format(", micro-batch {} x {}", o.micro_batch, o.grad_accum);
    if (o.zero == 3) s += fmt::format(", prefetch {}", o.prefetch);
    if (o.shard_group > 0 && o.shard_group != o.ranks) s += fmt::format(", hsdp:{}", o.shard_group);
    if (o.secondary_shard > 0) s += fmt::format(", hpz:{}", o.secondary_shard);
    return s;
}

int ranks_to_fit(const PlanModel& model, const PlanOptions& base, std::uint64_t budget_bytes,
                 Plan* last) {
    const int per_node = base.nodes.uniform_ranks_per_node();
    PlanOptions o = base;
    o.gpu_bytes = 0, o.zero = 3, o.offload = base.master, o.checkpoint = {1};
    o.micro_batch = 1, o.grad_accum = 1, o.prefetch = 0, o.shard_group = 0, o.secondary_shard = 0;
    for (long n = base.ranks; n <= (1L << 20); n *= 2) {
        o.ranks = int(n);
        o.nodes =
            per_node > 0 && n % per_node == 0 ? NodeLayout::blocks(int(n), per_node) : NodeLayout{};
        Plan p = make_plan(model, o);
        const bool fits = p.memory.device_total <= budget_bytes;
        if (last) *last = std::move(p);
        if (fits) return int(n);
    }
    return 0;
}

} // namespace shardlab
