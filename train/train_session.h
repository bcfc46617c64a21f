// A training session: the updater, the ZeRO engine and the model of one data-parallel run, built
// together, and the phases of a run over them — one step of A micro-batches, validation, resume
// from a checkpoint, saving one, and the ranks' agreement to stop. `shardlab train`
// (launch/trainer.cpp) drives it with its files and log lines, `shardlab bench step` times its
// step, and tests run it directly. Parsing and the pre-flight checks are launch/'s; a session
// takes what they resolved (SessionSpec).
#pragma once

#include "comm/communicator.h"
#include "comm/process_groups.h"
#include "comm/watched_calls.h"
#include "model/attention_kind.h"
#include "model/backend.h"
#include "model/checkpoint_policy.h"
#include "model/gpt2/gpt_init.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/precision.h"
#include "model/token_windows.h"
#include "optim/adamw.h"
#include "optim/updater.h"
#include "optim/zero_engine.h"
#include "plan/memory_plan.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardlab {

// What a session is built from, resolved from the flags (and checked) by its caller.
struct SessionSpec {
    ModelConfig config;
    int micro_batch = 1, seq = 0, grad_accum = 1; // seq: tokens per sequence
    Precision precision = Precision::bf16;
    CheckpointPolicy checkpoint;
    AttentionKind attention = AttentionKind::flash;
    ZeroOptions zero;     // zero.precision is `precision`
    AdamWConfig adam;     // the update's coefficients
    bool offload = false; // the update on the host (offload/host_updater.h)
    // Hybrid sharding: ZeRO 1-3 inside groups of this many consecutive ranks, replicated across
    // the N/S groups (comm/process_groups.h). 0 or N: flat ZeRO over the world. Must divide N.
    int shard_group = 0;
    // ZeRO++ hpZ (stage 3): a secondary shard per node (the world's node layout, blocks of K
    // consecutive ranks with K | S), read by every re-gather of a micro-batch.
    bool secondary_shard = false;
    // --reproducible (optim/exact_sum.h): every sequence its own forward and backward, the
    // gradients, loss and norm summed exactly: the same bits at any N, stage or split of the
    // global batch micro_batch x grad_accum x N.
    bool reproducible = false;
    // The groups' communicators' collective timeout (comm/mpi_watchdog.h; none: the default), as
    // the caller set on the world's.
    std::optional<double> collective_timeout;
};

struct StepOutcome {
    double loss = 0, seconds = 0, exposed_comm_seconds = 0;
    StepResult result;
};

// Fills micro-batch `a` of the step (inputs and targets, micro_batch x seq tokens each).
using BatchFill = std::function<void(int a, std::uint16_t* inputs, std::uint16_t* targets)>;

class TrainSession {
  public:
    // `ops` runs the model (the backend's, or a tracing decorator of them). With `agree`, the
    // engine is built collectively through it: a bad value in one rank's part of the initial
    // values stops every rank alike (comm/agreement.h); without, its error is this rank's. `init`
    // is let go once the engine holds its values (before the model is built).
    TrainSession(const SessionSpec& spec, Backend& backend, Communicator& comm, Ops& ops,
                 InitialValues init, WatchedComm* agree);
    TrainSession(const TrainSession&) = delete;
    TrainSession& operator=(const TrainSession&) = delete;

    // One training step at `lr`: grad_accum micro-batches of forward and backward, each filled by
    // `fill`, then the engine's step. The loss is the mean over micro-batches and ranks.
    StepOutcome step(int step, const BatchFill& fill, float lr);
    // The step of `shardlab train`: micro-batch a of step s on this rank starts at window
    // first_window(s, a, rank, N, A, B) of `train` (model/token_windows.h), wrapping around.
    StepOutcome step(int step, const TokenWindows& train, float lr);
    // Mean validation loss over the first `batches` global batches of `val`'s windows (fewer where
    // the split is shorter; each window once); its traffic is kept out of the statistics.
    double validate(const TokenWindows& val, int batches);
    // The signal every rank stops for after this step, the same on all (0: go on). Each step
    // asks the engine whether any rank was signalled (an all-reduce kept out of the statistics,
    // which also drains the streams at the step's end); only then does `outside` carry which
    // signal: the highest any rank received (SIGTERM > SIGUSR1 > SIGINT). Open MPI forwards a
    // signal rank by rank, so at a step's end some ranks may not have it yet.
    int agree_on_stop(int mine, WatchedComm& outside);
    // Loads every rank's state from the checkpoint in `dir` (rank 0 picks which one) and returns
    // the step to continue from, checked alike on every rank; `stop_after` (0: none) must be
    // after it.
    int resume(const std::string& dir, const nlohmann::json& config, int stop_after,
               WatchedComm& outside);
    // Saves the state after `step` into dir's checkpoint, keeping the previous one; its traffic
    // is kept out of the statistics.
    void save(const std::string& dir, const nlohmann::json& config, int step, WatchedComm& outside);
    // What the plan predicts for this session on this rank (staged_comm: the backend's), made
    // once, before the engine allocates (a run that cannot fit the node's memory is refused).
    const Plan& plan() const { return plan_; }
    // The training traffic of every communicator the engine uses: the world's under its keys,
    // a hybrid run's shard and replicate groups' as "<op>@shard" and "<op>@replicate", hpZ's
    // node group's as "<op>@node".
    CommStats comm_stats();
    void reset_comm_stats();
    // The shard group's size (N when flat) and whether the engine runs hybrid.
    int shard_size() const { return groups_ ? groups_->shard_size() : ranks_; }
    bool hybrid() const { return shard_size() < ranks_; }

    ZeroEngine& engine() { return *engine_; }
    Updater& updater() { return *updater_; }

  private:
    StepOutcome exact_step(int step, const BatchFill& fill, float lr);
    void forward_backward(int k, int n, const std::uint16_t* in, const std::uint16_t* tg,
                          float grad_scale);
    double exact_validate(const TokenWindows& val, std::uint64_t windows);
    std::uint64_t owned_state_bytes() const; // this rank's master, m and v
    std::uint64_t global_sequences() const {
        return std::uint64_t(spec_.micro_batch) * spec_.grad_accum * ranks_;
    }

    Plan predicted_plan() const;

    SessionSpec spec_;
    Backend& backend_;
    Communicator& comm_;
    int ranks_, rank_;
    std::unique_ptr<ProcessGroups> groups_; // hybrid (ZeRO 1-3 with S < N) or hpZ; else null
    Plan plan_;
    ParamLayout layout_;
    std::unique_ptr<Updater> updater_;
    std::unique_ptr<ZeroEngine> engine_;
    std::unique_ptr<Model> model_;
    std::vector<std::uint64_t> numel_; // every unit's size
    std::vector<std::uint16_t> in_, tg_;
};

} // namespace shardlab
