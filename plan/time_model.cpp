// The step's seconds: every collective call the step makes, timed on the profile's links; the
// engine's schedule replayed on two clocks — the compute stream and the comm stream, in the order
// the host enqueues work on each — so the compute stream's waits are the exposed communication;
// then the step's end (stage 0-1 reductions, the scalars, the update, stage 1-2's publish).
// docs/TIME.md sections 6-9.
#include "plan/time_model.h"

#include "comm/comm_model.h"
#include "comm/process_groups.h"
#include "core/dtype.h"
#include "core/error.h"
#include "offload/host_updater.h"
#include "optim/gather_schedule.h"
#include "optim/stage_policy.h"
#include "optim/unit_shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace shardlab {

namespace {
const char* kIntra = "intra_node";
const char* kInter = "inter_node";

const AlphaBeta& link_fit(const MachineProfile& p, const std::string& cls, CollectiveOp op) {
    const auto l = p.links.find(cls);
    if (l == p.links.end())
        throw UsageError(fmt::format("profile '{}' has no {} link (calibrated on {}); calibrate on "
                                     "a layout with one: `mpirun -np 2 shardlab calibrate` (two "
                                     "ranks on a node), --ranks-per-node for two nodes",
                                     p.name, cls, p.layout));
    const auto f = l->second.ops.find(op_name(op));
    if (f == l->second.ops.end())
        throw UsageError(
            fmt::format("profile '{}': links.{} has no {}; recalibrate", p.name, cls, op_name(op)));
    return f->second.fit;
}

// The classes a ring over `group` crosses: inter_node between its nodes, intra_node where a node
// holds two or more of its ranks.
std::vector<std::string> crossed(const NodeLayout& group) {
    std::vector<std::string> out;
    for (int n = 0; n < group.nodes(); ++n)
        if (group.members(n).size() >= 2) {
            out.push_back(kIntra);
            break;
        }
    if (group.nodes() > 1) out.push_back(kInter);
    return out;
}

// One collective call: its plan key, seconds and bytes.
struct Call {
    std::string key;
    double seconds = 0;
    LinkBytes bytes;
    std::string link;
    std::map<std::string, double> by_link;
};

// The communicators a step uses, as memory_plan.cpp's `groups` makes them (comm/process_groups.h).
struct StepGroups {
    NodeLayout world, shard, replicate;
    int world_rank = 0, shard_rank = 0, replicate_rank = 0;
    std::string shard_suffix, replicate_suffix;
    int S = 1;
};
StepGroups step_groups(const PlanOptions& o, int rank) {
    const int N = o.ranks, S = o.zero >= 1 && o.shard_group > 0 ? o.shard_group : N;
    const NodeLayout nodes = o.nodes.size() == N ? o.nodes : NodeLayout::single_node(N);
    const bool h = S != N;
    return {nodes,
            nodes.restrict_to(shard_group_members(N, S, rank)),
            nodes.restrict_to(replicate_group_members(N, S, rank)),
            rank,
            rank % S,
            rank / S,
            h ? "@shard" : "",
            h ? "@replicate" : "",
            S};
}

Call call(const MachineProfile& p, CollectiveOp op, std::uint64_t count, std::uint64_t es,
          const NodeLayout& g, int grank, const std::string& suffix) {
    Call c{std::string(op_name(op)) + suffix, 0, {}, "", {}};
    if (g.size() < 2) return c;
    c.bytes = predicted_bytes_sent(op, Algo::ring, count, es, g, grank, 0);
    c.seconds = collective_seconds(p, op, count, es, g, grank, &c.link, &c.by_link);
    return c;
}

// Per-unit compute seconds of the schedule's segments (section 5, rates applied).
struct UnitSeconds {
    double embed_fwd = 0, block_fwd = 0, head = 0, block_bwd = 0, recompute = 0, embed_bwd = 0;
};

// Rates of one direction (forward or backward): GEMMs, attention's kernels, memory-bound kernels.
struct Rates {
    double gemm = 0, attention = 0, bytes = 0;
};

double part_seconds(const WorkPart& w, const Rates& r) {
    return w.gemm_flop / r.gemm + w.attention_flop / r.attention + w.bytes / r.bytes;
}

// Attention's measured rates for the run's dtype and kind, else the GEMM rate (a built-in
// profile, or one calibrated before attention was timed; section 5).
std::pair<double, double> attention_rates(const MachineProfile& p, const std::string& dtype,
                                          AttentionKind kind, double gemm_rate) {
    const auto d = p.attention.find(dtype);
    if (d == p.attention.end()) return {gemm_rate, gemm_rate};
    const auto k = d->second.find(attention_name(kind));
    if (k == d->second.end()) return {gemm_rate, gemm_rate};
    return {k->second.forward_flop_per_s, k->second.backward_flop_per_s};
}

// The engine's micro-batch on two clocks (section 8). Gathers (stage 3) are enqueued at each
// acquire for the unit and the `prefetch` next, each starting once the comm stream is free and
// the compute stream has finished the work enqueued before it; a reduce-scatter (stages 2-3)
// starts once its unit's backward is done. The compute stream waits for a unit's gather, and, at
// a unit's first gradient, for the reduce-scatter two reductions back (its memory).
struct MicroBatch {
    double span = 0, waits = 0;
    std::map<std::string, double> exposed; // waits by the collective waited for
};
MicroBatch simulate(const Plan& plan, const UnitSeconds& us, const std::vector<Call>& gather_of,
                    const std::vector<Call>& regather_of, const std::vector<Call>& reduce_of,
                    const std::vector<Call>& across_of) {
    const PlanOptions& o = plan.options;
    const StagePolicy policy = stage_policy(o.zero);
    const int L = plan.model.config.layers, fin = L + 1;
    const auto sched = step_schedule(L, plan.model.config.tied_head);
    double compute = 0, comm = 0;
    MicroBatch mb;
    std::map<int, std::pair<double, std::string>> ready; // unit -> gather end, its key
    std::set<int> live, seen;
    // A unit's gradient reduction, in order: the reduce-scatter's end and, under hybrid
    // sharding, the across-replica all-reduce's after it; a wait is charged to each in turn.
    struct Reduction {
        double scatter_end, end;
        std::string scatter_key, across_key;
    };
    std::vector<Reduction> reduced;
    bool backward = false;
    auto wait = [&](double until, const std::string& key) {
        if (until > compute) {
            mb.waits += until - compute;
            mb.exposed[key] += until - compute;
            compute = until;
        }
    };
    auto wait_reduced = [&](const Reduction& r) {
        wait(r.scatter_end, r.scatter_key);
        wait(r.end, r.across_key);
    };
    auto gather = [&](int u) {
        if (!live.insert(u).second) return;
        const Call& c = seen.insert(u).second ? gather_of[u] : regather_of[u];
        comm = std::max(comm, compute) + c.seconds;
        ready[u] = {comm, c.key};
    };
    for (std::size_t i = 0; i < sched.size(); ++i) {
        const GatherEvent& e = sched[i];
        if (e.use == UnitUse::acquire) {
            if (policy.shards_parameters) {
                gather(e.unit);
                for (int u : upcoming_units(sched, i, o.prefetch)) gather(u);
                wait(ready[e.unit].first, ready[e.unit].second);
            }
            // The head runs under the last acquire before its backward: the embeddings' second
            // (tied) or ln_f's (untied, the head is in that unit).
            const bool head = plan.model.config.tied_head ? e.unit == 0 && i > 0 : e.unit == fin;
            if (e.unit == 0 && i == 0)
                compute += us.embed_fwd;
            else if (head)
                compute += us.head;
            else if (e.unit >= 1 && e.unit <= L && !backward)
                compute += us.block_fwd;
            else if (e.unit >= 1 && e.unit <= L) {
                if (policy.shards_gradients && reduced.size() >= 2)
                    wait_reduced(reduced[reduced.size() - 2]);
                compute += us.block_bwd +
                           (plan.options.checkpoint.checkpointed(e.unit - 1) ? us.recompute : 0.0);
            }
        } else if (e.use == UnitUse::release) {
            const auto next = upcoming_units(sched, i, o.prefetch);
            if (std::find(next.begin(), next.end(), e.unit) == next.end()) live.erase(e.unit);
        } else {
            backward = true;
            if (e.unit == 0) compute += us.embed_bwd;
            if (policy.shards_gradients) {
                const double scatter_end = std::max(comm, compute) + reduce_of[e.unit].seconds;
                comm = scatter_end + across_of[e.unit].seconds;
                reduced.push_back(
                    {scatter_end, comm, reduce_of[e.unit].key, across_of[e.unit].key});
            }
        }
    }
    // The step waits for the last reduction (the optimizer reads the shard).
    if (!reduced.empty()) wait_reduced(reduced.back());
    mb.span = compute;
    return mb;
}

// The offload tile pipeline (offload/host_updater.h): while the host updates tile k the copy
// stream brings tile k+1's gradient down and takes tile k-1's parameters up. Span:
// d_0 + sum_k max(u_k, d_{k+1} + h_{k-1}) + h_{K-1} (section 7); where the profile measured the
// pipeline itself for this dtype, u_k is its time per tile and the span is sum_k u_k.
double offload_span(const std::vector<std::uint64_t>& tiles, DType dtype, const MachineProfile& p,
                    double* copies, double* update) {
    const std::size_t K = tiles.size();
    const double es = double(dtype_size(dtype));
    const bool measured = p.offload_params_per_s.count(dtype_name(dtype)) > 0;
    const double rate = host_update_rate(p, dtype_name(dtype));
    auto d = [&](std::size_t k) { return k < K ? tiles[k] * es / p.d2h_pinned_bytes_per_s : 0; };
    auto h = [&](std::size_t k) { return k < K ? tiles[k] * es / p.h2d_pinned_bytes_per_s : 0; };
    auto u = [&](std::size_t k) { return tiles[k] / rate; };
    if (K == 0) return 0;
    double span = measured ? 0 : d(0) + h(K - 1);
    for (std::size_t k = 0; k < K; ++k) {
        span += measured ? u(k) : std::max(u(k), d(k + 1) + (k ? h(k - 1) : 0.0));
        *copies += d(k) + h(k);
        *update += u(k);
    }
    return span;
}

// The owned range of every unit, in offload's tiles of kOffloadTile elements.
std::vector<std::uint64_t> owned_tiles(const Plan& plan, int S) {
    const bool sharded = stage_policy(plan.options.zero).shards_optimizer_state;
    std::vector<std::uint64_t> tiles;
    for (auto n : plan.model.unit_numel) {
        std::uint64_t owned = sharded ? padded_numel(n, S) / S : padded_numel(n, S);
        for (; owned > 0; owned -= std::min<std::uint64_t>(owned, kOffloadTile))
            tiles.push_back(std::min<std::uint64_t>(owned, kOffloadTile));
    }
    return tiles;
}

// The device AdamW's bytes over the rank's owned parameters (section 7), as
// optim/device_updater.cpp runs it: m and v read and written in their format; the gradient read
// in the dtype; with an fp32 master (mixed precision), the master read and written and the
// parameter written in the dtype; without one (fp32 training, --no-master), the parameters
// themselves read and written in the dtype.
std::uint64_t device_update_bytes(const PlanModel& m, const PlanOptions& o, int S) {
    const bool sharded = stage_policy(o.zero).shards_optimizer_state;
    const bool has_master = o.precision != Precision::fp32 && o.master;
    const std::uint64_t es = param_bytes_per_element(o.precision);
    const std::uint64_t weights = has_master ? 4 + 4 + es : 2 * es; // per parameter
    std::uint64_t bytes = 0;
    for (auto n : m.unit_numel) {
        const std::uint64_t own = sharded ? padded_numel(n, S) / S : padded_numel(n, S);
        bytes += own * (weights + es) + 2 * 2 * moment_bytes(o.optimizer_states, own);
    }
    return bytes;
}
} // namespace

double collective_seconds(const MachineProfile& p, CollectiveOp op, std::uint64_t count,
                          std::uint64_t elem_bytes, const NodeLayout& group, int rank,
                          std::string* link, std::map<std::string, double>* by_link) {
    if (group.size() < 2) return 0;
    const int steps = ring_steps(op, group.size());
    const double b = double(ring_bytes_sent(op, count, elem_bytes, group.size(), rank, 0)) / steps;
    double slowest = -1;
    for (const std::string& cls : crossed(group)) {
        const double t = link_fit(p, cls, op).seconds(b);
        if (by_link) (*by_link)[cls] = steps * t;
        if (t > slowest) {
            slowest = t;
            if (link) *link = cls;
        }
    }
    return steps * slowest;
}

TimePrediction predict_time(const Plan& plan, const MachineProfile& p, int rank) {
    const PlanOptions o = as_run(plan.options); // --reproducible: one sequence a micro-batch
    const PlanModel& m = plan.model;
    const StepWork w = micro_batch_work(m, o);
    const std::string dt = dtype_name(param_dtype(o.precision));
    const auto g = p.gemm.find(dt);
    if (g == p.gemm.end())
        throw UsageError(fmt::format("profile '{}' has no GEMM rate for {}; calibrate with "
                                     "`shardlab calibrate --dtypes {}`",
                                     p.name, dt, dt));
    // The GEMMs' rate at this micro-batch's rows (M = B T); section 5.
    const double rows = double(o.micro_batch) * (o.seq ? o.seq : m.config.context);
    const double R = gemm_rate_at(g->second, rows), M = memory_bound_rate(p, dt);
    const auto [Raf, Rab] = attention_rates(p, dt, o.attention, R);
    const Rates F{R, Raf, M}, B{R, Rab, M}; // forward's and backward's
    const double A = o.grad_accum, L = w.layers;
    TimePrediction t;
    // Section 5: compute, each term alone, per step.
    const UnitSeconds us{part_seconds(w.embed_forward, F),
                         part_seconds(w.block_forward, F),
                         part_seconds(w.head_forward, F) + part_seconds(w.head_backward, B),
                         part_seconds(w.block_backward, B),
                         part_seconds(w.block_forward, F),
                         part_seconds(w.embed_backward, B)};
    t.forward_s = A * (us.embed_fwd + L * us.block_fwd + part_seconds(w.head_forward, F));
    t.backward_s = A * (us.embed_bwd + L * us.block_bwd + part_seconds(w.head_backward, B));
    t.recompute_s = A * w.recomputed_blocks * us.recompute;
    auto gemm = [&](const WorkPart& x) { return x.gemm_flop / R; };
    auto mem = [&](const WorkPart& x) { return x.bytes / M; };
    const double blocks = L + w.recomputed_blocks;
    t.gemm_s = A * (blocks * gemm(w.block_forward) + L * gemm(w.block_backward) +
                    gemm(w.head_forward) + gemm(w.head_backward));
    t.attention_s = A * (blocks * w.block_forward.attention_flop / Raf +
                         L * w.block_backward.attention_flop / Rab);
    t.memory_bound_s =
        A * (blocks * mem(w.block_forward) + L * mem(w.block_backward) + mem(w.head_forward) +
             mem(w.head_backward) + mem(w.embed_forward) + mem(w.embed_backward));
    // Section 6: every call, on its group's links.
    const StepGroups gr = step_groups(o, rank);
    const StagePolicy policy = stage_policy(o.zero);
    const std::uint64_t es = param_bytes_per_element(o.precision);
    const std::uint64_t gb = o.reproducible ? 8 : es; // a reduced gradient element (int64)
    const int S = gr.S;
    std::vector<Call> gather_of, regather_of, reduce_of, across_of, at_step, after_update;
    std::vector<int> secondary;
    for (int j = 0; j < o.secondary_shard; ++j)
        secondary.push_back(rank / o.secondary_shard * o.secondary_shard + j);
    const NodeLayout world_nodes = gr.world;
    for (std::size_t u = 0; u < m.unit_numel.size(); ++u) {
        const std::uint64_t P = padded_numel(m.unit_numel[u], S);
        gather_of.push_back(
            call(p, CollectiveOp::allgather, P, es, gr.shard, gr.shard_rank, gr.shard_suffix));
        regather_of.push_back(o.secondary_shard > 0 ? call(p, CollectiveOp::allgather, P, es,
                                                           world_nodes.restrict_to(secondary),
                                                           rank % o.secondary_shard, "@node")
                                                    : gather_of.back());
        reduce_of.push_back(call(p,
                                 policy.reduction() == GradientReduction::all_reduce
                                     ? CollectiveOp::allreduce
                                     : CollectiveOp::reduce_scatter,
                                 P, gb, gr.shard, gr.shard_rank, gr.shard_suffix));
        across_of.push_back(S != o.ranks ? call(p, CollectiveOp::allreduce, P / S, gb, gr.replicate,
                                                gr.replicate_rank, gr.replicate_suffix)
                                         : Call{});
        if (!policy.shards_gradients) {
            at_step.push_back(reduce_of.back());
            if (S != o.ranks && policy.shards_optimizer_state) at_step.push_back(across_of.back());
        }
        if (policy.gathers_after_update()) after_update.push_back(gather_of.back());
    }
    if (o.reproducible) { // int64 sums of each unit's squares and of the loss; the maxima
        const std::uint64_t U = m.unit_numel.size();
        at_step.push_back(
            call(p, CollectiveOp::allreduce, U, 8, gr.shard, gr.shard_rank, gr.shard_suffix));
        at_step.push_back(call(p, CollectiveOp::allreduce, 2, 8, gr.world, gr.world_rank, ""));
        at_step.push_back(
            call(p, CollectiveOp::allgather, U * o.ranks, 4, gr.world, gr.world_rank, ""));
    } else {
        at_step.push_back(call(p, CollectiveOp::allreduce, 1, 4, gr.shard, gr.shard_rank,
                               gr.shard_suffix)); // the gradient norm
        at_step.push_back(call(p, CollectiveOp::allreduce, 1, 4, gr.world, gr.world_rank, ""));
    }
    // Section 8: the schedule.
    const MicroBatch mb = simulate(plan, us, gather_of, regather_of, reduce_of, across_of);
    std::map<std::string, double> exposed;
    for (const auto& [k, s] : mb.exposed) exposed[k] += A * s;
    double step_end = 0;
    for (const Call& c : at_step) step_end += c.seconds, exposed[c.key] += c.seconds;
    for (const Call& c : after_update) step_end += c.seconds, exposed[c.key] += c.seconds;
    t.exposed_comm_s = A * mb.waits + step_end;
    // Section 7: the update.
    if (o.offload)
        t.offload_s = offload_span(owned_tiles(plan, S), param_dtype(o.precision), p, &t.copies_s,
                                   &t.host_update_s);
    else
        t.optimizer_s = double(device_update_bytes(m, o, S)) / M;
    t.compute_s = t.forward_s + t.backward_s + t.recompute_s + t.optimizer_s;
    t.step_s = t.compute_s + t.exposed_comm_s + t.offload_s;
    // Every collective of the step, all calls, beside the plan's bytes (the same by construction:
    // tests/test_time_model.cpp holds them equal).
    std::map<std::string, CollectiveTime> by_op;
    auto add = [&](const Call& c, double k) {
        if (c.key.empty() || c.seconds == 0) return;
        CollectiveTime& x = by_op[c.key];
        x.op = c.key, x.link = c.link;
        x.calls += std::uint64_t(k);
        x.seconds += k * c.seconds;
        for (const auto& [cls, s] : c.by_link) x.seconds_by_link[cls] += k * s;
        x.bytes +=
            LinkBytes{std::uint64_t(k) * c.bytes.intra_node, std::uint64_t(k) * c.bytes.inter_node};
    };
    for (const Call& c : at_step) add(c, 1);
    for (const Call& c : after_update) add(c, 1);
    if (policy.shards_gradients)
        for (std::size_t u = 0; u < reduce_of.size(); ++u)
            add(reduce_of[u], A), add(across_of[u], A);
    if (policy.shards_parameters) {
        const GatherSimulation sim =
            simulate_gathers(step_schedule(int(L), m.config.tied_head),
                             std::vector<std::uint64_t>(m.unit_numel.size()), o.prefetch);
        for (std::size_t i = 0; i < sim.gathers.size(); ++i)
            add(sim.regathers[i] ? regather_of[sim.gathers[i]] : gather_of[sim.gathers[i]], A);
    }
    for (auto& [k, c] : by_op) {
        t.comm_s += c.seconds;
        t.collectives.push_back(c);
    }
    const double tokens = double(o.ranks) * o.micro_batch * (o.seq ? o.seq : m.config.context) * A;
    t.tokens_per_s = tokens / t.step_s;
    t.tokens_per_s_per_rank = t.tokens_per_s / o.ranks;
    // The critical path: the largest term of the step.
    std::vector<std::pair<double, std::string>> terms = {
        {t.forward_s, "forward compute"},
        {t.backward_s, "backward compute"},
        {t.recompute_s, "recompute (checkpointing)"},
        {t.optimizer_s, "device AdamW update"},
        {t.offload_s, t.host_update_s >= t.copies_s ? "offload pipeline (host AdamW bound)"
                                                    : "offload pipeline (copy bound)"}};
    for (const auto& [k, s] : exposed) terms.push_back({s, "exposed " + k});
    t.exposed_by_op = exposed;
    const auto top = std::max_element(terms.begin(), terms.end());
    t.critical_path =
        fmt::format("{} ({:.0f}% of the step)", top->second, 100.0 * top->first / t.step_s);
    return t;
}

} // namespace shardlab
