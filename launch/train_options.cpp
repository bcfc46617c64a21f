// Flag registration for `shardlab train`.
#include "launch/train_options.h"

#include "core/error.h"
#include "launch/flag_checks.h"
#include "plan/builtin_profiles.h"

#include <fmt/format.h>

#include <limits>

namespace shardlab {

void add_train_options(CLI::App& cmd, TrainOptions& o) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    cmd.add_option("--config", o.config_file,
                   "TOML file of flag = value lines (flags given on the command line win)");
    cmd.add_option("--deepspeed-config", o.deepspeed_config,
                   "DeepSpeed ds_config.json: its common keys as these flags (flags win; "
                   "docs/DECISIONS.md has the table)");
    cmd.add_flag("--print-config", o.print_config,
                 "Print the options the run would use (after --config / --deepspeed-config) as "
                 "JSON, and exit without training");
    add_model_options(cmd, o.model);
    cmd.add_option(
        "--init", o.init,
        "Start from these weights instead of a fresh init: a .safetensors file, a Hugging "
        "Face folder (config.json + model.safetensors or shards) or its index .json");
    cmd.add_option("--precision", o.precision, "fp32 | bf16 | fp16");
    cmd.add_option("--zero", o.zero, "ZeRO stage 0-3");
    cmd.add_flag("--offload", o.offload,
                 "Master weights, m, v and the update on the host (any stage)");
    cmd.add_option("--prefetch", o.prefetch, "ZeRO-3: units gathered ahead of use")
        ->check(at_least(0));
    cmd.add_flag("--reproducible", o.reproducible,
                 "The same bits at any rank count, stage, offload or split of the global batch: "
                 "one sequence a pass, gradients, norm and loss summed exactly in int64 fixed "
                 "point (8-byte reductions; docs/DECISIONS.md)");
    cmd.add_option("--shard-group", o.shard_group,
                   "Hybrid sharding (HSDP / MiCS): ZeRO 1-3 inside groups of S consecutive ranks "
                   "(S divides N) or of each node ('node'), replicated across the N/S groups "
                   "(default: all N ranks)");
    cmd.add_option("--secondary-shard", o.secondary_shard,
                   "ZeRO++ hpZ ('node', ZeRO-3): a node-local secondary shard of the "
                   "parameters; backward's re-gathers stay inside the node");
    cmd.add_option("--ranks-per-node", o.ranks_per_node,
                   "Declare nodes of K consecutive ranks (K divides N; default: detected from "
                   "shared memory): the node groups and link classes follow them")
        ->check(at_least(0));
    cmd.add_option("--checkpoint", o.checkpoint, "Activation checkpointing: none | all | every:K");
    cmd.add_option("--attention", o.attention,
                   "flash (tiles and an online softmax; keeps a per-row log-sum-exp) | "
                   "materialize (keeps the T x T probabilities; the reference path)");
    cmd.add_option("--micro-batch", o.micro_batch, "Sequences per rank per micro-batch");
    cmd.add_option("--grad-accum", o.grad_accum, "Micro-batches per step");
    cmd.add_option("--global-batch", o.global_batch,
                   "Sequences per step over all ranks (sets --grad-accum)")
        ->check(at_least(0));
    cmd.add_option("--steps", o.steps, "Optimizer steps");
    cmd.add_option("--lr", o.lr, "Peak learning rate")->check(in_fp32_range(0, kInf));
    cmd.add_option("--warmup", o.warmup, "Linear warmup steps")->check(at_least(0));
    cmd.add_option("--schedule", o.schedule, "cosine | linear | constant (after warmup)");
    cmd.add_option("--min-lr-ratio", o.min_lr_ratio, "Decay floor as a fraction of --lr")
        ->check(in_fp32_range(0, 1));
    cmd.add_option("--weight-decay", o.weight_decay, "AdamW decoupled weight decay (2-D weights)")
        ->check(in_fp32_range(0, kInf));
    cmd.add_option("--beta1", o.beta1, "AdamW beta1")->check(in_fp32_range(0, 1, false, true));
    cmd.add_option("--beta2", o.beta2, "AdamW beta2")->check(in_fp32_range(0, 1, false, true));
    cmd.add_option("--eps", o.eps, "AdamW epsilon")->check(in_fp32_range(0, kInf, true));
    cmd.add_option("--grad-clip", o.grad_clip, "Global gradient-norm clip (0: off)")
        ->check(in_fp32_range(0, kInf));
    cmd.add_option("--loss-scale", o.loss_scale,
                   "fp16: initial dynamic loss scale (halved on an overflow, never below 1)")
        ->check(in_fp32_range(1, kInf));
    cmd.add_option("--seed", o.seed, "Initialisation and sampling seed (0 to 2^64 - 1)")
        ->check(seed_range());
    cmd.add_option("--data", o.data,
                   "Text file or llm.c token shard (default: /usr/share/common-licenses)");
    cmd.add_option("--val-every", o.val_every,
                   "Validation loss every K steps (0: only at the end)");
    cmd.add_option("--val-batches", o.val_batches,
                   "Global batches of validation windows per validation (each window once: "
                   "fewer where the validation split is shorter)");
    cmd.add_option("--out", o.out, "Run directory: report.json, steps.jsonl, checkpoint/");
    cmd.add_option("--save-weights", o.save_weights,
                   "Write the trained fp32 weights: a .safetensors file, or a folder (a path "
                   "ending in '/', or an existing directory) in Hugging Face's layout: "
                   "config.json and model.safetensors, or shards with their index");
    cmd.add_option("--save-shard-size", o.save_shard_size,
                   "Largest shard of a --save-weights folder, e.g. 5GB (the default, "
                   "save_pretrained's), 500MB, 64KiB")
        ->transform(CLI::AsSizeValue(true))
        ->check(CLI::Range(std::uint64_t(1), std::uint64_t(1) << 50));
    cmd.add_option("--sample", o.sample, "Generate this many tokens at the end");
    cmd.add_option("--save-every", o.save_every,
                   "Checkpoint the full training state every K steps");
    cmd.add_option("--resume", o.resume,
                   "Continue from a run directory's checkpoint (at any rank count and ZeRO "
                   "stage, with the same global batch and config); --out defaults to that "
                   "directory");
    cmd.add_option("--stop-after", o.stop_after,
                   "Stop after this step, keeping --steps' schedule (resume later)")
        ->check(at_least(0));
    cmd.add_option("--max-bad-steps", o.max_bad_steps,
                   "Stop with exit code 3 after this many consecutive steps with a non-finite "
                   "loss or gradient norm (the run diverged), keeping the last checkpoint whose "
                   "next loss was finite (0: never stop)")
        ->check(at_least(0));
    add_device_options(cmd, o.device, true);
    cmd.add_flag("--quiet", o.quiet, "No progress or step lines");
    cmd.add_option("--log-every", o.log_every,
                   "A log line every K steps and at every validation (default: about 20 per "
                   "run); on a terminal a status line updates in between")
        ->check(at_least(1));
    cmd.add_option("--trace", o.trace,
                   "Write a Chrome/Perfetto trace (JSON) of every rank's streams: ops, "
                   "collectives, copies, host updates, memory (open in ui.perfetto.dev)");
    cmd.add_option("--profile", o.profile,
                   "Machine profile (`shardlab calibrate --out FILE`, or " +
                       builtin_profile_list(" | ") +
                       "): report.json and the table put the predicted step time beside the "
                       "measured (docs/TIME.md)");
    cmd.add_flag("--calibrate", o.calibrate,
                 "Calibrate this machine at the start (this model, micro-batch and precision), "
                 "write OUT/profile.json and predict the step with it, as --profile does");
    cmd.add_option("--trace-steps", o.trace_steps,
                   "Steps --trace records, after the first (which warms caches up)")
        ->check(at_least(1));
    cmd.add_flag("--overwrite", o.overwrite,
                 "Replace the run already in --out (its report, log and checkpoint)");
    cmd.add_flag("--log-memory", o.log_memory,
                 "Record each step's tracked bytes per category and resident memory (RSS) of "
                 "every rank in steps.jsonl (for leak hunting: scripts/soak.sh)");
    cmd.add_option("--collective-timeout", o.collective_timeout,
                   "Seconds a rank may wait in one collective before every rank reports where "
                   "it is and the job ends (a stopped or hung rank; 0: wait forever; at least 1 "
                   "s: shorter waits happen in healthy runs)")
        ->check(zero_or_in_range(1, 1e9, "wait forever"));
}

nlohmann::json train_options_json(const TrainOptions& o, const nlohmann::json& model, int seq,
                                  int grad_accum) {
    return {{"model", model},
            {"vocab_multiple", o.model.vocab_multiple},
            {"init", o.init},
            {"precision", o.precision},
            {"zero", o.zero},
            {"offload", o.offload},
            {"prefetch", o.prefetch},
            {"reproducible", o.reproducible},
            {"shard_group", o.shard_group},
            {"ranks_per_node", o.ranks_per_node},
            {"secondary_shard", o.secondary_shard},
            {"checkpoint", o.checkpoint},
            {"attention", o.attention},
            {"micro_batch", o.micro_batch},
            {"grad_accum", grad_accum},
            {"global_batch", o.global_batch},
            {"seq", seq},
            {"steps", o.steps},
            {"lr", o.lr},
            {"warmup", o.warmup},
            {"schedule", o.schedule},
            {"min_lr_ratio", o.min_lr_ratio},
            {"weight_decay", o.weight_decay},
            {"beta1", o.beta1},
            {"beta2", o.beta2},
            {"eps", o.eps},
            {"grad_clip", o.grad_clip},
            {"loss_scale", o.loss_scale},
            {"seed", o.seed},
            {"data", o.data.empty() ? "default corpus (/usr/share/common-licenses)" : o.data},
            {"val_every", o.val_every},
            {"val_batches", o.val_batches},
            {"deepspeed_config", o.deepspeed_config}}; // "" when none
}

int effective_grad_accum(const TrainOptions& o, int ranks) {
    if (!o.global_batch) return o.grad_accum;
    const int per_step = ranks * o.micro_batch;
    if (o.global_batch % per_step != 0)
        throw UsageError(fmt::format("--global-batch {} is not divisible by N x micro-batch = {} x "
                                     "{} = {}; use a multiple of {}",
                                     o.global_batch, ranks, o.micro_batch, per_step, per_step));
    const int accum = o.global_batch / per_step;
    if (o.grad_accum != 1 && o.grad_accum != accum)
        throw UsageError(fmt::format("--grad-accum {} and --global-batch {} disagree: {} ranks x "
                                     "micro-batch {} x grad-accum {} = {} sequences; give one of "
                                     "the two",
                                     o.grad_accum, o.global_batch, ranks, o.micro_batch,
                                     o.grad_accum, per_step * o.grad_accum));
    return accum;
}

LrSchedule lr_schedule(const TrainOptions& o) {
    const auto decay = o.schedule == "linear"     ? LrSchedule::Decay::linear
                       : o.schedule == "constant" ? LrSchedule::Decay::constant
                                                  : LrSchedule::Decay::cosine;
    return {o.lr, o.warmup, o.steps, o.min_lr_ratio, decay};
}

AdamWConfig adamw_config(const TrainOptions& o) {
    return AdamWConfig{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay};
}

} // namespace shardlab
