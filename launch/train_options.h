// Everything `shardlab train` can be told, from flags or a config file (`--config FILE`, TOML
// `key = value` lines named like the flags; flags win) or a DeepSpeed ds_config.json
// (`--deepspeed-config`, launch/deepspeed_config.h), and its JSON form for the report and
// checkpoints.
#pragma once

#include "launch/device_options.h"
#include "launch/model_options.h"
#include "model/weights_writer.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace shardlab {

struct TrainOptions {
    ModelOptions model;
    std::string init; // start from these weights instead of a fresh init
    std::string precision = "bf16", checkpoint = "none", schedule = "cosine";
    std::string attention = "flash"; // flash | materialize (model/attention_kind.h)
    int zero = 0, prefetch = 0;
    // Hybrid sharding: "" (the world: flat ZeRO), a rank count S dividing N, or "node" (the
    // ranks of one node). --ranks-per-node K declares nodes of K consecutive ranks (0: detect).
    std::string shard_group;
    std::string secondary_shard; // "node": ZeRO++ hpZ at stage 3; "": none
    int ranks_per_node = 0;
    bool offload = false;
    bool reproducible = false; // --reproducible (optim/exact_sum.h)
    int micro_batch = 8, grad_accum = 1, global_batch = 0, steps = 100, warmup = 10;
    float lr = 1e-3f, min_lr_ratio = 0.1f, weight_decay = 0.1f, beta1 = 0.9f, beta2 = 0.95f,
          eps = 1e-8f;
    float grad_clip = 1.0f, loss_scale = 65536.0f;
    std::uint64_t seed = 1337;
    std::string data; // empty: the default corpus
    int val_every = 0, val_batches = 4;
    std::string out = "out", save_weights, resume;
    std::uint64_t save_shard_size = kDefaultShardBytes; // a --save-weights folder's shard limit
    int sample = 0, save_every = 0;
    DeviceOptions device;
    int stop_after = 0;    // stop after this step (0: run all --steps), as a time-limited job would
    int max_bad_steps = 5; // stop (exit 3) after this many non-finite steps in a row (0: never)
    bool quiet = false;
    int log_every = 0;   // a log line every K steps (0: about 20 lines per run)
    std::string trace;   // --trace FILE: a Chrome/Perfetto trace of every rank's streams
    int trace_steps = 3; // steps traced (after the first, which warms caches up)
    std::string profile; // --profile FILE | built-in: the time model beside the measurement
    bool calibrate =
        false; // --calibrate: a profile measured at the start (launch/train_calibrate.h)
    bool overwrite = false;  // may replace another run's files in --out
    bool log_memory = false; // each step\'s tracked bytes and RSS, every rank, in steps.jsonl
    double collective_timeout =
        300;                      // seconds one collective may wait (comm/mpi_watchdog.h); 0: none
    std::string config_file;      // applied by add_train_command's runner (flags win)
    std::string deepspeed_config; // ditto, after config_file (launch/deepspeed_config.h)
    bool print_config = false;    // print the options as JSON and exit without training
};

void add_train_options(CLI::App& cmd, TrainOptions& o);
// The grad-accum a run on `ranks` ranks uses: --grad-accum, or --global-batch / (N x
// micro-batch). UsageError when --global-batch does not divide, or disagrees with a --grad-accum
// other than 1 (one of them is then not what the run would do).
int effective_grad_accum(const TrainOptions& o, int ranks);
// grad_accum: the effective value (effective_grad_accum).
nlohmann::json train_options_json(const TrainOptions& o, const nlohmann::json& model, int seq,
                                  int grad_accum);
// --lr, --warmup, --steps, --min-lr-ratio and --schedule as the schedule the run follows.
LrSchedule lr_schedule(const TrainOptions& o);
// --lr, --beta1, --beta2, --eps and --weight-decay as the run's AdamW settings.
AdamWConfig adamw_config(const TrainOptions& o);

} // namespace shardlab
