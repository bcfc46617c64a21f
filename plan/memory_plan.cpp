// Model states, activations, buffers and traffic, stage by stage (docs/MEMORY.md).
#include "plan/memory_plan.h"

#include "comm/chunking.h"
#include "comm/comm_model.h"
#include "comm/process_groups.h"
#include "core/error.h"
#include "model/family.h"
#include "offload/host_updater.h"
#include "optim/gather_schedule.h"
#include "optim/stage_policy.h"
#include "optim/unit_shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace shardlab {

std::uint64_t param_bytes_per_element(Precision p) {
    return p == Precision::fp32 ? 4 : 2;
}

std::uint64_t moment_bytes(OptimizerStates t, std::uint64_t n) {
    switch (t) {
    case OptimizerStates::fp32:
        return 4 * n;
    case OptimizerStates::bf16:
        return 2 * n;
    case OptimizerStates::int8:
        return n + (n + 2047) / 2048 * 4; // one fp32 absmax per 2048
    }
    return 0;
}

std::optional<std::uint64_t> model_workspace_bytes(const ModelConfig& c, int batch, int seq,
                                                   int grad_accum, Precision p,
                                                   GemmWorkspace gemm) {
    if (gemm == GemmWorkspace::unmodelled) return std::nullopt;
    const std::uint64_t S = param_bytes_per_element(p), BT = std::uint64_t(batch) * seq;
    // The largest product's workspace: backward runs them all (a linear's input gradient has its
    // forward's three matrix sizes), beside the gradient scratch, so the peak is there.
    std::uint64_t widest = 0;
    if (gemm == GemmWorkspace::widened_operands)
        for (const GemmShape& g : family(c.arch).gemm_shapes(c, std::int64_t(BT)))
            widest = std::max(widest, std::uint64_t(g.m * g.k + g.k * g.n + g.m * g.n) * 4);
    const std::uint64_t scalars = 2 * sizeof(float);             // ZeroEngine: loss scale, norm
    const std::uint64_t tokens = 2 * BT * sizeof(std::uint16_t); // inputs and targets
    const std::uint64_t losses = std::uint64_t(grad_accum) * sizeof(double);
    const std::uint64_t grad_scratch = family(c.arch).gradient_scratch_bytes(c, batch, seq, S);
    return scalars + tokens + losses + grad_scratch + widest;
}

std::uint64_t generic_activation_bytes(int layers, int hidden, int heads, int batch, int seq,
                                       Precision p, CheckpointPolicy ck) {
    const double s = seq, b = batch, h = hidden, a = heads;
    const double width = p == Precision::fp32 ? 2.0 : 1.0; // the formula is for 16-bit tensors
    const double full = s * b * h * (34 + 5 * a * s / h);
    double total = 0;
    bool recomputes = false;
    for (int l = 0; l < layers; ++l) {
        total += ck.checkpointed(l) ? 2 * s * b * h : full;
        recomputes = recomputes || ck.checkpointed(l);
    }
    if (recomputes) total += full; // the one layer being recomputed in backward
    return std::uint64_t(std::llround(total * width));
}

std::uint64_t parse_gpu(const std::string& name) {
    // Total memory as the CUDA runtime reports it on these cards.
    if (name == "a100-40") return 42505273344ull;
    if (name == "a100-80") return 85198045184ull;
    if (name == "h100-80") return 85520809984ull;
    if (name == "h200-141") return 150754820096ull;
    std::optional<double> v;
    try {
        std::size_t pos = 0;
        const double d = std::stod(name, &pos);
        if (pos == name.size()) v = d;
    } catch (const std::out_of_range&) {
        v = HUGE_VAL; // beyond a double's range (1e400, 1e-400): refused below
    } catch (const std::invalid_argument&) {
    }
    // 2^63: llround's and uint64's common range, and far beyond any memory (9.2 EB).
    if (v && std::isfinite(*v) && *v >= 1 && *v < 0x1p63) return std::uint64_t(std::llround(*v));
    if (v && !std::isnan(*v))
        throw UsageError("GPU memory '" + name +
                         "' is not a byte count in [1, 2^63): give a finite count of bytes, "
                         "e.g. 80e9");
    throw UsageError("unknown GPU '" + name +
                     "'; use a100-40, a100-80, h100-80, h200-141 or a byte count");
}

std::optional<std::uint64_t> predicted_device_bytes(const MemoryPlan& m, Category c) {
    switch (c) {
    case Category::params:
        return m.params;
    case Category::grads:
        return m.grads;
    case Category::master:
        return m.master;
    case Category::optimizer:
        return m.optimizer;
    case Category::activations:
        return m.activations;
    case Category::comm_buffers:
        return m.buffers;
    case Category::workspace:
        return m.workspace;
    }
    return std::nullopt;
}

namespace {
void check_options(const PlanModel& m, const PlanOptions& o) {
    if (o.ranks < 1) throw UsageError(fmt::format("ranks must be at least 1, got {}", o.ranks));
    check_stage(o.zero, o.prefetch);
    if (o.micro_batch < 1 || o.grad_accum < 1)
        throw UsageError("--micro-batch and --grad-accum must be at least 1");
    if (o.shard_group < 0 || (o.shard_group > 0 && o.ranks % o.shard_group != 0))
        throw UsageError(fmt::format("--shard-group {} does not divide N = {} ranks: ZeRO shards "
                                     "inside groups of S consecutive ranks, N/S of them; use a "
                                     "divisor of {}",
                                     o.shard_group, o.ranks, o.ranks));
    if (o.secondary_shard > 0 && o.zero != 3)
        throw UsageError("--secondary-shard applies to ZeRO-3 only; drop it or use --zero 3");
    if (o.secondary_shard > 0 &&
        (o.shard_group > 0 ? o.shard_group : o.ranks) % o.secondary_shard != 0)
        throw UsageError(fmt::format(
            "--secondary-shard: a node of {} ranks must lie inside a shard group of {}; the "
            "node's size must divide the shard group's",
            o.secondary_shard, o.shard_group > 0 ? o.shard_group : o.ranks));
    if (o.precision == Precision::fp32 && !o.master)
        throw UsageError(
            "--no-master applies to mixed precision; fp32 training has no separate master copy");
    if (o.offload && !o.master)
        throw UsageError(
            "--offload keeps an fp32 master copy on the host; drop --no-master or --offload");
    if (o.inference && (o.zero != 0 || o.offload))
        throw UsageError(
            "--inference models one full replica of the weights per rank; drop --zero / --offload");
    if (m.arch() != Architecture::params_only && (o.seq < 0 || o.seq > m.config.context))
        throw UsageError(
            fmt::format("--seq {} exceeds the model's context {}", o.seq, m.config.context));
    if (m.arch() != Architecture::params_only) require_attention(family(m.arch()), o.attention);
    if (m.arch() == Architecture::params_only && o.inference)
        throw UsageError("--inference needs the model's shape (layers, hidden, heads) for the KV "
                         "cache; give a preset or fields");
}

// Model states per rank (device or host), for the training engine.
// The ranks ZeRO shards over: the shard group at stages 1-3 of a hybrid run, else all of them
// (stage 0 keeps whole units and all-reduces over the world, groups or not).
int sharding_ranks(const PlanOptions& o) {
    return o.zero >= 1 && o.shard_group > 0 ? o.shard_group : o.ranks;
}
bool hybrid(const PlanOptions& o) {
    return sharding_ranks(o) != o.ranks;
}

void model_states(const PlanModel& m, const PlanOptions& o, MemoryPlan& mem) {
    const int N = sharding_ranks(o);
    const StagePolicy policy = stage_policy(o.zero);
    const std::uint64_t pb = param_bytes_per_element(o.precision), gb = pb;
    const bool mixed = o.precision != Precision::fp32;
    const bool has_master = o.offload || (mixed && o.master);
    std::uint64_t full = 0, owned = 0, owned_moments = 0, max_block = 0;
    for (std::size_t u = 0; u < m.unit_numel.size(); ++u) {
        const std::uint64_t P = padded_numel(m.unit_numel[u], N);
        const std::uint64_t own = policy.shards_optimizer_state ? P / N : P;
        full += P;
        owned += own;
        owned_moments += 2 * moment_bytes(o.optimizer_states, own); // m and v, per unit
        if (int(u) != m.embedding_unit && int(u) != m.final_unit)
            max_block = std::max(max_block, P);
    }
    mem.params = (policy.shards_parameters ? owned : full) * pb;
    if (policy.shards_parameters && o.secondary_shard > 0) // hpZ's node-local shards
        for (auto n : m.unit_numel) mem.params += padded_numel(n, N) / o.secondary_shard * pb;
    if (!policy.shards_gradients) {
        mem.grads = full * gb;
        if (o.reproducible) mem.grads += full * 8; // the int64 sums of whole units
    } else { // the owned shard, plus full unit gradients from first use to reduce-scatter
        // A bare parameter count has no units: model states only, as in the ZeRO paper. A tied
        // head writes the embedding gradient first and embedding backward last, so it lives
        // through the whole backward; the others live two at a time (optim/unit_shards.h), in
        // backward's order: the final unit, the blocks from the last, untied embeddings last.
        std::uint64_t transient = 0;
        if (m.arch() != Architecture::params_only) {
            auto P = [&](std::size_t u) { return padded_numel(m.unit_numel[u], N); };
            std::vector<std::uint64_t> order{P(std::size_t(m.final_unit))};
            for (std::size_t u = m.unit_numel.size(); u-- > 0;)
                if (int(u) != m.embedding_unit && int(u) != m.final_unit) order.push_back(P(u));
            if (!m.config.tied_head) order.push_back(P(std::size_t(m.embedding_unit)));
            transient = full_gradient_peak(order, m.config.tied_head ? P(m.embedding_unit) : 0);
        }
        mem.grads = (owned + transient) * gb;
        if (o.reproducible) { // the int64 shard sums, and two full units a sequence's sum passes
            std::uint64_t largest = 0; // (a bare count has no units: the shard sums alone)
            if (m.arch() != Architecture::params_only)
                for (auto n : m.unit_numel) largest = std::max(largest, padded_numel(n, N));
            mem.grads += owned * 8 + 2 * largest * 8;
        }
    }
    const std::uint64_t master = has_master ? owned * 4 : 0;
    (o.offload ? mem.host_master : mem.master) = master;
    (o.offload ? mem.host_optimizer : mem.optimizer) = owned_moments;
    if (o.offload) {
        mem.host_grads = owned * 4; // the fp32 gradient the host update reads
        // The copies' staging tiles: an implementation's, so not for a bare parameter count
        // (model states only, as in the ZeRO paper).
        if (m.arch() != Architecture::params_only) mem.host_staging = offload_staging_bytes(pb);
    }
}

// The bytes of a gradient element as the reductions send it: int64 fixed point under
// --reproducible, else the parameters' dtype.
std::uint64_t reduced_bytes(const PlanOptions& o) {
    return o.reproducible ? 8 : param_bytes_per_element(o.precision);
}

// A ring reduce-scatter's (or all-reduce's) scratch: two of its largest chunks.
std::uint64_t ring_scratch(std::uint64_t count, int n, std::uint64_t elem_bytes) {
    return n > 1 ? 2 * Chunking{count, n}.max_size() * elem_bytes : 0;
}

// The scratch of a unit's gradient reduction, for one call at a time: the reduce-scatter over the
// sharding ranks and, hybrid, then the all-reduce of the shard across the replicas.
std::uint64_t reduce_scratch(std::size_t numel, const PlanOptions& o, std::uint64_t elem_bytes) {
    const int S = sharding_ranks(o);
    const std::uint64_t P = padded_numel(numel, S);
    return std::max(ring_scratch(P, S, elem_bytes), ring_scratch(P / S, o.ranks / S, elem_bytes));
}

// Collective scratch and, in stage 3, gathered units: comm_buffers at its peak.
void buffers(const PlanModel& m, const PlanOptions& o, MemoryPlan& mem, GatherSimulation* sim) {
    if (m.arch() == Architecture::params_only) return; // model states only: no units, no buffers
    // Stages 0-2: one collective at a time, nothing gathered; the scalar all-reduces (the loss
    // over the world, the norm over the sharding ranks) use two one-element fp32 chunks.
    // --reproducible: the loss as two int64 over the world, the norm as one int64 per unit.
    const std::uint64_t units = m.unit_numel.size();
    const std::uint64_t scalars =
        o.reproducible
            ? std::max(ring_scratch(2, o.ranks, 8), ring_scratch(units, sharding_ranks(o), 8))
            : ring_scratch(1, o.ranks, 4);
    std::uint64_t scratch = scalars;
    for (auto n : m.unit_numel) scratch = std::max(scratch, reduce_scratch(n, o, reduced_bytes(o)));
    // Stage 3: a reduce-scatter may run while prefetched units are live; the simulation knows.
    mem.buffers = stage_policy(o.zero).shards_parameters && sim
                      ? std::max(sim->peak_buffer_bytes, scalars)
                      : scratch;
    // Staged through the host, one ring step at a time: its send and receive chunks — for the
    // largest unit the reduce-scatter's scratch, or with hpZ a gather from the secondary shards,
    // a ring over the node's K ranks whose chunks are S/K times a sharding gather's.
    if (!o.staged_comm) return;
    mem.host_buffers = scratch;
    if (stage_policy(o.zero).shards_parameters && o.secondary_shard > 0)
        for (auto n : m.unit_numel)
            mem.host_buffers =
                std::max(mem.host_buffers,
                         ring_scratch(padded_numel(n, sharding_ranks(o)), o.secondary_shard,
                                      param_bytes_per_element(o.precision)));
}

void add_op(CommPlan& c, const std::string& op, LinkBytes bytes, std::uint64_t calls) {
    c.by_op[op] += bytes.total();
    c.by_op_link[op] += bytes;
    c.calls[op] += calls;
    c.bytes_per_step += bytes.total();
}

LinkBytes times(std::uint64_t k, LinkBytes b) {
    return {k * b.intra_node, k * b.inter_node};
}

// A communicator the step's collectives run on, as the model needs it: this rank's place in it,
// its members' nodes, and the suffix its ops are reported under.
struct Group {
    NodeLayout layout;
    int rank = 0;
    std::string suffix;
    LinkBytes sent(CollectiveOp op, std::uint64_t count, std::uint64_t es) const {
        return predicted_bytes_sent(op, Algo::ring, count, es, layout, rank, 0);
    }
};

// The world, and the groups a hybrid run shards and replicates over (flat: both the world's
// ranks, the replicate group this rank alone), as comm/process_groups.h makes them.
struct Groups {
    Group world, shard, replicate;
};
Groups groups(const PlanOptions& o, int rank) {
    const int N = o.ranks, S = sharding_ranks(o);
    const NodeLayout nodes = o.nodes.size() == N ? o.nodes : NodeLayout::single_node(N);
    const bool h = hybrid(o);
    return {
        {nodes, rank, ""},
        {nodes.restrict_to(shard_group_members(N, S, rank)), rank % S, h ? "@shard" : ""},
        {nodes.restrict_to(replicate_group_members(N, S, rank)), rank / S, h ? "@replicate" : ""}};
}

// hpZ's secondary group: the K consecutive ranks around `rank` (K | S, checked with the options).
Group secondary_group(const PlanOptions& o, int rank) {
    const int N = o.ranks, K = o.secondary_shard;
    const NodeLayout nodes = o.nodes.size() == N ? o.nodes : NodeLayout::single_node(N);
    std::vector<int> members;
    for (int j = 0; j < K; ++j) members.push_back(rank / K * K + j);
    return {nodes.restrict_to(members), rank % K, "@node"};
}

CommPlan communication(const PlanModel& m, const PlanOptions& o, int rank,
                       const GatherSimulation* sim) {
    const int N = sharding_ranks(o), A = o.grad_accum;
    const StagePolicy policy = stage_policy(o.zero);
    const std::uint64_t pb = param_bytes_per_element(o.precision), gb = reduced_bytes(o);
    CommPlan c;
    const Groups g = groups(o, rank);
    const Group& sg = g.shard; // the sharding ranks' group: the world unless hybrid
    auto sent = [&](CollectiveOp op, std::uint64_t count, std::uint64_t es) {
        return sg.sent(op, count, es);
    };
    auto shard_op = [&](const char* op) { return op + sg.suffix; };
    // Hybrid: each reduce-scatter's shard is then averaged across the replicas.
    auto across = [&](std::uint64_t P) {
        return g.replicate.sent(CollectiveOp::allreduce, P / N, gb);
    };
    const std::string across_op = "allreduce" + g.replicate.suffix;
    const std::size_t units = m.unit_numel.size();
    for (std::size_t u = 0; u < units; ++u) {
        const std::uint64_t P = padded_numel(m.unit_numel[u], N);
        switch (policy.reduction()) {
        case GradientReduction::all_reduce:
            add_op(c, shard_op("allreduce"), sent(CollectiveOp::allreduce, P, gb), 1);
            break;
        case GradientReduction::reduce_scatter:
            add_op(c, shard_op("reduce_scatter"), sent(CollectiveOp::reduce_scatter, P, gb), 1);
            if (hybrid(o)) add_op(c, across_op, across(P), 1);
            break;
        case GradientReduction::per_unit: // every micro-batch's backward
            add_op(c, shard_op("reduce_scatter"),
                   times(A, sent(CollectiveOp::reduce_scatter, P, gb)), A);
            if (hybrid(o)) add_op(c, across_op, times(A, across(P)), A);
            break;
        }
        if (policy.gathers_after_update()) {
            const LinkBytes b = sent(CollectiveOp::allgather, P, pb);
            add_op(c, shard_op("allgather"), b, 1);
            c.applied_only[shard_op("allgather")] += b;
            c.applied_only_calls[shard_op("allgather")] += 1;
        }
    }
    if (policy.shards_parameters && sim)
        for (std::size_t i = 0; i < sim->gathers.size(); ++i) {
            const std::uint64_t P = padded_numel(m.unit_numel[sim->gathers[i]], N);
            // hpZ: a unit gathered before in the micro-batch is gathered inside the node
            const bool node =
                o.secondary_shard > 0 && i < sim->regathers.size() && sim->regathers[i];
            const Group& from = node ? secondary_group(o, rank) : sg;
            add_op(c, node ? "allgather" + from.suffix : shard_op("allgather"),
                   times(A, from.sent(CollectiveOp::allgather, P, pb)), A);
        }
    // The gradient norm (over the sharding ranks: a hybrid run's replicas hold the same shards)
    // and the mean loss (over the world): one fp32 each (the norm also tells fp16 ranks alike
    // whether any gradient overflowed).
    if (o.reproducible) { // int64 sums (a unit's squares each; the loss and a non-finite count),
                          // and every rank's per-unit largest gradient, all-gathered
        add_op(c, shard_op("allreduce"), sent(CollectiveOp::allreduce, units, 8), 1);
        add_op(c, "allreduce", g.world.sent(CollectiveOp::allreduce, 2, 8), 1);
        add_op(c, "allgather", g.world.sent(CollectiveOp::allgather, units * o.ranks, 4), 1);
    } else {
        add_op(c, shard_op("allreduce"), sent(CollectiveOp::allreduce, 1, 4), 1);
        add_op(c, "allreduce", g.world.sent(CollectiveOp::allreduce, 1, 4), 1);
    }
    if (o.offload) {
        std::uint64_t owned = 0;
        for (auto n : m.unit_numel)
            owned += policy.shards_optimizer_state ? padded_numel(n, N) / N : padded_numel(n, N);
        // (N: the sharding ranks)
        c.device_to_host = owned * pb; // the owned range's gradients, as the params' dtype
        c.host_to_device = owned * pb; // updated parameters back
    }
    return c;
}

std::uint64_t device_total(const MemoryPlan& m) {
    return m.params + m.grads + m.master + m.optimizer + m.activations + m.buffers + m.kv_cache;
}

Plan plan_once(const PlanModel& model, const PlanOptions& o, int rank) {
    check_options(model, o);
    Plan p{model, o, {}, {}, true, 0, false, std::nullopt};
    const int seq = o.seq ? o.seq : model.config.context;
    MemoryPlan& mem = p.memory;
    if (o.inference) {
        const std::uint64_t pb = param_bytes_per_element(o.precision);
        const std::uint64_t kv_hidden =
            std::uint64_t(model.config.hidden) / model.config.heads * model.config.kv_heads;
        mem.params = model.params * pb;
        mem.kv_cache = 2ull * model.config.layers * o.micro_batch * seq * kv_hidden * pb;
    } else {
        model_states(model, o, mem);
        const bool gathers = stage_policy(o.zero).shards_parameters; // units gathered on use
        GatherSimulation sim;
        const bool has_units = model.arch() != Architecture::params_only;
        if (gathers && has_units) {
            std::vector<std::uint64_t> unit_bytes;
            for (auto n : model.unit_numel)
                unit_bytes.push_back(padded_numel(n, sharding_ranks(o)) *
                                     param_bytes_per_element(o.precision));
            std::vector<std::uint64_t> scratch;
            for (auto n : model.unit_numel)
                scratch.push_back(reduce_scratch(n, o, reduced_bytes(o)));
            sim = simulate_gathers(step_schedule(model.config.layers, model.config.tied_head),
                                   unit_bytes, o.prefetch, scratch);
        } else if (gathers) { // a bare parameter count: forward and backward each gather all once
            sim.gathers = {0, 0};
        }
        buffers(model, o, mem, gathers ? &sim : nullptr);
        p.comm = communication(model, o, rank, gathers ? &sim : nullptr);
        if (model.arch() != Architecture::params_only) {
            mem.activations_generic = generic_activation_bytes(
                model.config.layers, model.config.hidden, model.config.heads, o.micro_batch, seq,
                o.precision, o.checkpoint);
            mem.activations_exact = true; // each family's own count of what its model keeps
            mem.activations = family(model.arch())
                                  .activation_bytes(model.config, o.micro_batch, seq,
                                                    param_bytes_per_element(o.precision),
                                                    o.checkpoint, o.attention);
        }
        // The model's own workspace; --reproducible's per-sequence sums are not modelled.
        if (model.arch() != Architecture::params_only && !o.reproducible)
            mem.workspace = model_workspace_bytes(model.config, o.micro_batch, seq, o.grad_accum,
                                                  o.precision, o.gemm_workspace);
    }
    mem.device_total = device_total(mem);
    mem.host_total =
        mem.host_grads + mem.host_master + mem.host_optimizer + mem.host_staging + mem.host_buffers;
    if (o.gpu_bytes) p.fits = mem.device_total <= o.gpu_bytes;
    return p;
}
} // namespace

// --reproducible runs every sequence as its own micro-batch: that is the schedule to plan.
PlanOptions as_run(PlanOptions o) {
    if (o.reproducible && !o.inference) o.grad_accum *= o.micro_batch, o.micro_batch = 1;
    return o;
}

Plan make_plan(const PlanModel& model, const PlanOptions& requested, int rank) {
    const PlanOptions o = as_run(requested);
    Plan p = plan_once(model, o, rank);
    p.options = requested;
    if (o.reproducible && !o.inference) {
        PlanOptions plain = requested;
        plain.reproducible = false;
        const Plan d = plan_once(model, plain, rank);
        p.reproducible_cost = ReproducibleCost{d.comm.bytes_per_step, d.memory.device_total};
    }
    if (!o.inference) {
        PlanOptions dp = o;
        dp.zero = 0;
        dp.offload = false;
        dp.prefetch = 0;
        dp.secondary_shard = 0;
        const std::uint64_t base = plan_once(model, dp, rank).comm.bytes_per_step;
        p.comm.ratio_to_dp = base ? double(p.comm.bytes_per_step) / double(base) : 0.0;
    }
    if (o.gpu_bytes && model.arch() != Architecture::params_only) { // largest micro-batch that fits
        int lo = 0, hi = 1;
        auto fits = [&](int b) {
            PlanOptions t = requested;
            t.micro_batch = b;
            return plan_once(model, as_run(t), rank).memory.device_total <= o.gpu_bytes;
        };
        while (hi <= kMicroBatchSearched && fits(hi)) lo = hi, hi *= 2;
        p.max_micro_batch_unbounded = hi > kMicroBatchSearched; // no micro-batch tried failed
        while (!p.max_micro_batch_unbounded && hi - lo > 1) {
            const int mid = (lo + hi) / 2;
            (fits(mid) ? lo : hi) = mid;
        }
        p.max_micro_batch = lo;
    }
    return p;
}

} // namespace shardlab
