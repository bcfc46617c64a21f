// Implementation of train/train_session.h: the phases of a run, each one call over the engine
// and the model.
#include "train/train_session.h"

#include "comm/agreement.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "core/test_hook.h"
#include "core/timer.h"
#include "core/tracer.h"
#include "model/families.h"
#include "offload/host_updater.h"
#include "optim/checkpoint.h"
#include "optim/device_updater.h"
#include "plan/plan_model.h"

#include <fmt/format.h>

#include <exception>

namespace shardlab {

namespace {
// Where the update runs: on the host (offload) or next to the parameters.
std::unique_ptr<Updater> make_updater(const SessionSpec& s, DeviceContext& ctx, Ops& ops) {
    if (s.offload) return std::make_unique<HostUpdater>(ctx, s.adam, param_dtype(s.precision));
    return std::make_unique<DeviceUpdater>(ctx, ops, s.adam, s.precision != Precision::fp32);
}

// Restores the communicators' statistics when it leaves scope: traffic that is not a training
// step's (validation, the stop agreement, checkpoints) stays out of the report. Never throws:
// stats() waits for the comm stream, which rethrows a failed stream's error, and a destructor
// that throws ends the process in std::terminate instead of the error's message. While an error
// unwinds the scope it does nothing; a stream that failed since is reported by the next wait
// (its group's error stays).
class StatsKeeper {
  public:
    StatsKeeper(Communicator& comm, ProcessGroups* groups) {
        keep(comm);
        if (groups) keep(groups->shard()), keep(groups->replicate()), keep(groups->node());
    }
    ~StatsKeeper() {
        if (std::uncaught_exceptions() > unwinding_) return;
        try {
            for (auto& [comm, saved] : saved_) comm->stats() = saved;
        } catch (const std::exception&) {
        }
    }
    StatsKeeper(const StatsKeeper&) = delete;
    StatsKeeper& operator=(const StatsKeeper&) = delete;

  private:
    void keep(Communicator& c) { saved_.emplace_back(&c, c.stats()); }
    std::vector<std::pair<Communicator*, CommStats>> saved_;
    int unwinding_ = std::uncaught_exceptions();
};

// Hybrid sharding needs its groups only where the engine shards (stages 1-3) over fewer ranks
// than the world, hpZ for its node group; the flat engine is built exactly as before.
std::unique_ptr<ProcessGroups> make_groups(const SessionSpec& s, Backend& backend,
                                           Communicator& comm) {
    const int S = s.shard_group > 0 ? s.shard_group : comm.size();
    const bool hpz = s.secondary_shard && s.zero.stage == 3;
    if (!hpz && (s.zero.stage == 0 || S == comm.size())) {
        shard_group_members(comm.size(), S, comm.rank()); // S must still divide N
        return nullptr;
    }
    return std::make_unique<ProcessGroups>(comm, S, [&](MPI_Comm c) {
        std::unique_ptr<Communicator> group = backend.communicator(c);
        if (s.collective_timeout) group->set_collective_timeout(*s.collective_timeout);
        return group;
    });
}

// A run whose host memory, as the plan predicts it (everything on the CPU backend; what offload
// keeps on the host otherwise), cannot fit in what this node has available for its ranks is
// refused before the first allocation: it would grow until the kernel's OOM killer ended it
// (a 7B model on a 24 GB machine took a minute to get there). Only a run that cannot fit: the
// plan leaves out the process's own baseline, so one that fits tightly may still fail later.
void check_host_memory(const MemoryPlan& plan, bool cpu, const NodeLayout& nodes, int rank) {
    const std::uint64_t mine = (cpu ? plan.device_total : 0) + plan.host_total;
    const std::optional<std::uint64_t> available = available_host_bytes();
    const auto local = std::uint64_t(nodes.members(nodes.node(rank)).size());
    if (!available || mine * local <= *available) return;
    throw UsageError(fmt::format(
        "this run needs about {:.1f} GB of host memory on a node ({} rank(s) x {:.1f} GB: the "
        "model states, activations and buffers `shardlab plan` predicts), and the node has "
        "{:.1f} GB available (MemAvailable and free swap); spread it over more nodes (ZeRO-3 "
        "shards the model states), or use a smaller --micro-batch or --seq, --checkpoint all, or "
        "a smaller model",
        double(mine * local) / 1e9, local, double(mine) / 1e9, double(*available) / 1e9));
}
} // namespace

TrainSession::TrainSession(const SessionSpec& spec, Backend& backend, Communicator& comm, Ops& ops,
                           InitialValues init, WatchedComm* agree)
    : spec_(spec), backend_(backend), comm_(comm), ranks_(comm.size()), rank_(comm.rank()),
      layout_(spec.config) {
    DeviceContext& ctx = backend.context();
    spec_.zero.precision = spec.precision;
    if (spec_.reproducible) spec_.zero.exact_sequences = global_sequences();
    groups_ = make_groups(spec_, backend, comm);
    updater_ = make_updater(spec_, ctx, ops);
    // The engine's groups (hpZ's checked against the nodes), then the plan. Every rank measures
    // what its node has left before any of them allocates (the agreement is the barrier): a rank
    // that measured after another's engine would count that engine twice.
    ZeroGroups g{comm};
    auto check = [&] {
        if (hybrid()) g.shard = &groups_->shard(), g.replicate = &groups_->replicate();
        if (groups_ && spec_.secondary_shard && spec_.zero.stage == 3) {
            const int K = groups_->node().size();
            if (shard_size() % K != 0 || node_shard_size(comm.node_layout()) != K)
                throw UsageError(fmt::format(
                    "--secondary-shard node: each node ({}) must be a block of consecutive ranks "
                    "inside one shard group of {}; use a shard group that is a multiple of the "
                    "node",
                    comm.node_layout().describe(), shard_size()));
            g.secondary = &groups_->node();
        }
        plan_ = predicted_plan();
        check_host_memory(plan_.memory, ctx.device().kind == DeviceKind::cpu, comm.node_layout(),
                          rank_);
    };
    auto build = [&] {
        engine_ = std::make_unique<ZeroEngine>(layout_, spec_.zero, g, ctx, ops, *updater_, init);
    };
    for (const auto& phase : {std::function<void()>(check), std::function<void()>(build)}) {
        if (agree)
            collectively(phase, *agree);
        else
            phase();
    }
    init = nullptr; // an --init file's reader, say
    const int model_batch = spec_.reproducible ? 1 : spec_.micro_batch; // one sequence a pass
    model_ = make_model(spec_.config, model_batch, spec_.seq, spec_.checkpoint,
                        param_dtype(spec_.precision), ctx, ops, spec_.attention);
    numel_ = layout_.unit_numels();
    in_.resize(std::size_t(spec_.micro_batch) * spec_.seq);
    tg_.resize(in_.size());
}

// Pass k of n of a step: forward and backward over `in` / `tg`, each traced and followed by the
// tracker's snapshot of its phase.
void TrainSession::forward_backward(int k, int n, const std::uint16_t* in, const std::uint16_t* tg,
                                    float grad_scale) {
    MemoryTracker& tracker = backend_.context().tracker();
    Tracer* tracer = backend_.context().tracer();
    Stream& compute = backend_.context().compute();
    {
        const TraceScope span(tracer, compute, fmt::format("forward {}/{}", k, n), "step");
        model_->forward(*engine_, in, tg, grad_scale);
    }
    tracker.snapshot("forward");
    {
        const TraceScope span(tracer, compute, fmt::format("backward {}/{}", k, n), "step");
        model_->backward(*engine_);
    }
    tracker.snapshot("backward");
}

StepOutcome TrainSession::step(int step, const BatchFill& fill, float lr) {
    if (spec_.reproducible) return exact_step(step, fill, lr);
    MemoryTracker& tracker = backend_.context().tracker();
    Tracer* tracer = backend_.context().tracer();
    Stream& compute = backend_.context().compute();
    const int A = spec_.grad_accum;
    StepOutcome out;
    const double t0 = now_seconds();
    const TraceScope step_span(tracer, compute, fmt::format("step {}", step + 1), "step");
    for (int a = 0; a < A; ++a) {
        fill(a, in_.data(), tg_.data());
        engine_->begin_micro_batch(a > 0);
        forward_backward(a + 1, A, in_.data(), tg_.data(), engine_->grad_scale() / float(A));
    }
    {
        const TraceScope span(tracer, compute, "optimizer step", "step");
        out.result = engine_->step(lr);
    }
    tracker.snapshot("step");
    double sum = 0;
    for (double l : model_->take_losses()) sum += l;
    out.loss = engine_->average(sum / A);
    out.exposed_comm_seconds = engine_->take_exposed_comm_seconds();
    out.seconds = now_seconds() - t0;
    return out;
}

// --reproducible: each micro-batch's sequences one at a time, each gradient of the mean loss of
// its own tokens (the engine divides the exact sum by G); a step the engine asks to redo (a
// gradient outgrew its fixed-point exponent) runs again over the same windows.
StepOutcome TrainSession::exact_step(int step, const BatchFill& fill, float lr) {
    MemoryTracker& tracker = backend_.context().tracker();
    Tracer* tracer = backend_.context().tracer();
    Stream& compute = backend_.context().compute();
    const int A = spec_.grad_accum, B = spec_.micro_batch, T = spec_.seq;
    StepOutcome out;
    const double t0 = now_seconds();
    const TraceScope step_span(tracer, compute, fmt::format("step {}", step + 1), "step");
    std::vector<double> losses;
    do {
        for (int a = 0; a < A; ++a) {
            fill(a, in_.data(), tg_.data());
            for (int b = 0; b < B; ++b) {
                engine_->begin_micro_batch(false);
                forward_backward(a * B + b + 1, A * B, in_.data() + std::size_t(b) * T,
                                 tg_.data() + std::size_t(b) * T, engine_->grad_scale());
            }
        }
        losses = model_->take_losses();
        const TraceScope span(tracer, compute, "optimizer step", "step");
        out.result = engine_->step(lr);
    } while (out.result.redo);
    tracker.snapshot("step");
    out.loss = engine_->exact_average(losses, global_sequences());
    out.exposed_comm_seconds = engine_->take_exposed_comm_seconds();
    out.seconds = now_seconds() - t0;
    return out;
}

StepOutcome TrainSession::step(int step, const TokenWindows& train, float lr) {
    const int A = spec_.grad_accum, B = spec_.micro_batch;
    return this->step(
        step,
        [&](int a, std::uint16_t* in, std::uint16_t* tg) {
            train.fill_wrapped(first_window(step, a, rank_, ranks_, A, B), B, in, tg);
        },
        lr);
}

// The first `batches` global batches of validation windows, each window once: a window past the
// split's end is not taken (its wrapped copy would count twice). The same windows at any rank
// count; outside --reproducible the ranks run whole micro-batches, so a split too short for the
// request is cut to a multiple of N x micro-batch instead (docs/DECISIONS.md).
double TrainSession::validate(const TokenWindows& val, int batches) {
    const StatsKeeper keep(comm_, groups_.get());
    test_hook_stop("validation", rank_);
    const std::uint64_t wanted = std::uint64_t(batches) * global_sequences();
    if (spec_.reproducible)
        return exact_validate(val, std::min<std::uint64_t>(wanted, val.count()));
    const std::uint64_t round = std::uint64_t(ranks_) * spec_.micro_batch; // windows a pass
    const std::uint64_t passes = std::min<std::uint64_t>(wanted, val.count()) / round;
    check(passes > 0, fmt::format("validation needs {} windows (N x micro-batch), the split holds "
                                  "{}; use more data or a smaller --micro-batch",
                                  round, val.count()));
    const TraceScope span(backend_.context().tracer(), backend_.context().compute(), "validation",
                          "step");
    double sum = 0;
    for (std::uint64_t k = 0; k < passes; ++k) {
        val.fill((k * ranks_ + rank_) * spec_.micro_batch, spec_.micro_batch, in_.data(),
                 tg_.data());
        engine_->begin_micro_batch(false);
        model_->forward(*engine_, in_.data(), tg_.data());
        sum += model_->take_losses().front();
    }
    const double loss = engine_->average(sum / double(passes)); // every rank ran `passes`
    engine_->take_exposed_comm_seconds();
    backend_.context().tracker().snapshot("validation");
    return loss;
}

// --reproducible: the first V windows, each rank a contiguous share (uneven where N does not
// divide V), one sequence at a time, the losses summed exactly. Every rank runs as many forwards
// as the largest share: at ZeRO-3 each forward gathers every unit, so a rank with a shorter share
// forwards its first window again and drops that loss (else the ranks' collectives part ways).
double TrainSession::exact_validate(const TokenWindows& val, std::uint64_t V) {
    const TraceScope span(backend_.context().tracer(), backend_.context().compute(), "validation",
                          "step");
    const std::uint64_t first = V * rank_ / ranks_, mine = V * (rank_ + 1) / ranks_ - first;
    const std::uint64_t passes = (V + ranks_ - 1) / ranks_;
    for (std::uint64_t k = 0; k < passes; ++k) {
        val.fill(k < mine ? first + k : first, 1, in_.data(), tg_.data());
        engine_->begin_micro_batch(false);
        model_->forward(*engine_, in_.data(), tg_.data());
    }
    std::vector<double> losses = model_->take_losses();
    losses.resize(mine); // the repeats' losses are not the rank's share
    const double loss = engine_->exact_average(losses, V);
    engine_->take_exposed_comm_seconds();
    backend_.context().tracker().snapshot("validation");
    return loss;
}

int TrainSession::agree_on_stop(int mine, WatchedComm& outside) {
    const StatsKeeper keep(comm_, groups_.get());
    const double any = engine_->average(mine);
    engine_->take_exposed_comm_seconds();
    if (any == 0) return 0;
    int signo = mine;
    outside.allreduce(&signo, 1, MPI_MAX, "stop agreement: which signal");
    return signo;
}

int TrainSession::resume(const std::string& dir, const nlohmann::json& config, int stop_after,
                         WatchedComm& outside) {
    const std::string cdir = agree_checkpoint_dir(dir, outside);
    ZeroEngine::OwnedState saved;
    // The load's host copies: the owned state until the engine has it, and while it is filled one
    // rank file at a time, read whole and decoded beside it.
    MemoryTracker& tracker = backend_.context().tracker();
    const HostStaging state(tracker, owned_state_bytes());
    collectively(
        [&] {
            std::vector<ElementRange> want;
            for (std::size_t u = 0; u < numel_.size(); ++u)
                want.push_back({engine_->owned_offset(int(u)), engine_->owned_count(int(u))});
            const HostStaging file(tracker, 2 * largest_rank_file_bytes(cdir));
            saved = load_checkpoint(cdir, config, numel_, want);
            const int steps = config.value("steps", 0);
            if (saved.iteration >= steps)
                throw UsageError(fmt::format(
                    "checkpoint '{}' is at step {} of {}: the run is complete, nothing to "
                    "resume (its report stays as it is); to train on, start a new run from its "
                    "weights: checkpoint export, then train --init",
                    cdir, saved.iteration, steps));
            if (stop_after > 0 && stop_after <= saved.iteration)
                throw UsageError(
                    fmt::format("--stop-after {} is not after the checkpoint's step {}; nothing "
                                "to do",
                                stop_after, saved.iteration));
        },
        outside);
    int first = saved.iteration;
    outside.bcast(&first, sizeof first, 0, "resume: the checkpoint's step");
    collectively(
        [&] {
            check(saved.iteration == first,
                  fmt::format("checkpoint '{}': rank {}'s file is at step {}, rank 0's at step "
                              "{}; the checkpoint is inconsistent: {}",
                              cdir, rank_, saved.iteration, first, earlier_checkpoint_hint(cdir)));
        },
        outside);
    engine_->load_owned(saved);
    if (rank_ == 0) fmt::print("resumed from '{}' at step {}\n", cdir, first);
    return first;
}

std::uint64_t TrainSession::owned_state_bytes() const {
    std::uint64_t n = 0;
    for (std::size_t u = 0; u < numel_.size(); ++u) n += engine_->owned_count(int(u));
    return 12 * n; // master, m, v in fp32
}

void TrainSession::save(const std::string& dir, const nlohmann::json& config, int step,
                        WatchedComm& outside) {
    const StatsKeeper keep(comm_, groups_.get());
    // A hybrid run saves as the S ranks of one replica would (the first group writes, the
    // others hold the same state): the files are global element ranges, any N resumes them.
    const int S = shard_size();
    const bool writes = rank_ < S;
    MemoryTracker& tracker = backend_.context().tracker();
    {
        // The save's host copies, declared for its duration: the owned state, and on a rank that
        // writes, its file's slices and their encoding (12 bytes an element each), all three
        // alive as the encoding ends.
        const std::uint64_t file = checkpoint_file_bytes(numel_, S, rank_ % S);
        const HostStaging copies(tracker, owned_state_bytes() + (writes ? 2 * file : 0));
        ZeroEngine::OwnedState st = engine_->save_owned();
        st.iteration = step;
        save_checkpoint(dir, config, S, rank_ % S, st, numel_, outside, true, writes);
    }
    // A phase of its own, after the copies are gone: its peak is the save's, and the phase after
    // it (the next step, or the run's end) starts without them.
    tracker.snapshot("checkpoint");
}

CommStats TrainSession::comm_stats() {
    CommStats all = comm_.stats();
    if (hybrid()) {
        all.merge(groups_->shard().stats(), "@shard");
        all.merge(groups_->replicate().stats(), "@replicate");
    }
    if (groups_) all.merge(groups_->node().stats(), "@node");
    return all;
}

void TrainSession::reset_comm_stats() {
    comm_.stats().reset();
    if (groups_) {
        groups_->shard().stats().reset(), groups_->replicate().stats().reset();
        groups_->node().stats().reset();
    }
}

Plan TrainSession::predicted_plan() const {
    PlanOptions po;
    po.ranks = ranks_, po.zero = spec_.zero.stage, po.offload = spec_.offload,
    po.precision = spec_.precision, po.checkpoint = spec_.checkpoint,
    po.attention = spec_.attention;
    po.micro_batch = spec_.micro_batch, po.seq = spec_.seq, po.grad_accum = spec_.grad_accum,
    po.prefetch = spec_.zero.prefetch;
    po.staged_comm = backend_.stages_comm_through_host();
    po.shard_group = shard_size();
    po.secondary_shard =
        groups_ && spec_.secondary_shard && spec_.zero.stage == 3 ? groups_->node().size() : 0;
    po.nodes = comm_.node_layout();
    po.reproducible = spec_.reproducible;
    po.gemm_workspace = backend_.gemm_workspace(param_dtype(spec_.precision));
    return make_plan(plan_model_from(spec_.config, architecture_name(spec_.config.arch)), po,
                     rank_);
}

} // namespace shardlab
