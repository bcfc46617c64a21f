// The training run, top to bottom: validate the request, build backend / data / model / engine,
// loop over steps (micro-batches -> step -> log), then report.
#include "launch/trainer.h"

#include "comm/agreement.h"
#include "comm/node_layout.h"
#include "comm/process_groups.h"
#include "core/error.h"
#include "core/file_target.h"
#include "core/heap_trim.h"
#include "core/test_hook.h"
#include "core/timer.h"
#include "launch/cli_util.h"
#include "launch/divergence_guard.h"
#include "launch/final_weights.h"
#include "launch/progress.h"
#include "launch/run_lock.h"
#include "launch/sha256.h"
#include "launch/steps_log.h"
#include "launch/stop_request.h"
#include "launch/trace_file.h"
#include "launch/train_calibrate.h"
#include "launch/train_report.h"
#include "launch/train_time.h"
#include "model/backend.h"
#include "model/corpus.h"
#include "model/families.h"
#include "model/generate.h"
#include "model/kernels/cpu/cpu_gemm.h"
#include "model/kernels/cpu/threads.h"
#include "model/token_windows.h"
#include "model/traced_ops.h"
#include "model/weights_io.h"
#include "optim/checkpoint.h"
#include "optim/lr_schedule.h"
#include "optim/stage_policy.h"
#include "optim/zero_engine.h"
#include "train/train_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

namespace shardlab {

namespace {
struct RunSetup {
    ModelConfig config;
    std::unique_ptr<WeightsReader> init; // --init: read piece by piece (null: the family's draws)
    TrainValSplit data;
    bool byte_level = true; // the tokens are bytes (text files, the default corpus); else ids
    int seq = 0, grad_accum = 1;
    Precision precision = Precision::bf16;
    CheckpointPolicy checkpoint;
    AttentionKind attention = AttentionKind::flash;
    int shard_group = 0; // S resolved (0: the world); "node" is resolved once the nodes are known
    std::optional<MachineProfile> calibrated; // --calibrate's profile, measured before the model
    std::string data_sha256;                  // the tokens' fingerprint (data_fingerprint)
    std::unique_ptr<RunLock> lock;            // rank 0's: --out is this run's while it lives
};

// --shard-group's rule, checked before anything runs: S consecutive ranks per group, N/S groups.
void check_shard_group(const TrainOptions& o, int ranks, RunSetup& s) {
    if (o.ranks_per_node > 0 && ranks % o.ranks_per_node != 0)
        throw UsageError(fmt::format("--ranks-per-node {} does not divide N = {} ranks: nodes are "
                                     "blocks of K consecutive ranks; use a divisor of {}",
                                     o.ranks_per_node, ranks, ranks));
    if (!o.secondary_shard.empty() && o.secondary_shard != "node")
        throw UsageError("--secondary-shard " + o.secondary_shard +
                         " is not a secondary shard group; use 'node' (ZeRO++ hpZ)");
    if (!o.secondary_shard.empty() && o.zero != 3)
        throw UsageError("--secondary-shard node applies to --zero 3 only (it shards the "
                         "parameters ZeRO-3 gathers); drop it or use --zero 3");
    if (o.shard_group.empty() || o.shard_group == "node") return;
    int S = 0;
    try {
        std::size_t pos = 0;
        S = std::stoi(o.shard_group, &pos);
        if (pos != o.shard_group.size()) S = 0;
    } catch (const std::exception&) {
        S = 0;
    }
    std::string divisors;
    for (int d = 1; d <= ranks; ++d)
        if (ranks % d == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(d);
    if (S < 1 || ranks % S != 0)
        throw UsageError(fmt::format(
            "--shard-group {} does not divide N = {} ranks: ZeRO shards inside groups of S "
            "consecutive ranks and replicates across the N/S groups, so S must divide N; use "
            "one of {} or 'node'",
            o.shard_group, ranks, divisors));
    s.shard_group = S;
}

// What a run leaves in its directory: its report, log and checkpoints.
constexpr const char* kRunFiles[] = {"report.json",         "steps.jsonl",
                                     "checkpoint",          "checkpoint.prev",
                                     "checkpoint.diverged", "checkpoint.rejected"};

// Whether the run continues the one in its own --out (--resume names that run or its checkpoint).
bool resumes_in_place(const TrainOptions& o) {
    std::error_code ec;
    return !o.resume.empty() && std::filesystem::equivalent(o.out, run_directory_of(o.resume), ec);
}

// Why a --resume path holds no checkpoint, for its message.
std::string no_checkpoint_reason(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return ": no such directory";
    if (!fs::is_directory(dir, ec))
        return " is a file; give the run's --out directory (it holds checkpoint/)";
    if (fs::exists(fs::path(dir) / "report.json", ec))
        return ": that run saved no checkpoint (one is left by --save-every K or --stop-after K)";
    return ": no checkpoint there (no meta.json); point at a run's --out directory";
}

// A run directory holding another run (its report, log or checkpoint) is not overwritten unless
// asked: --resume continues it, --overwrite replaces it.
void check_run_directory(const TrainOptions& o) {
    namespace fs = std::filesystem;
    const fs::path out(o.out);
    std::error_code ec;
    if (!o.resume.empty() && !has_checkpoint(o.resume))
        throw UsageError("--resume " + o.resume + no_checkpoint_reason(o.resume));
    if (fs::exists(out / "meta.json"))
        throw UsageError("--out " + o.out + " is a checkpoint directory (it holds meta.json); " +
                         "give --out the run's directory, " + run_directory_of(o.out));
    if (o.overwrite || resumes_in_place(o)) return;
    for (const char* f : kRunFiles)
        if (fs::exists(out / f))
            throw UsageError("--out " + o.out + " holds another run (" + f +
                             "); continue it with --resume " + o.out +
                             ", replace it with --overwrite, or choose another --out");
}

// --overwrite, once every rank's checks passed: rank 0 removes what the replaced run left, so
// none of it is taken for this run's (its checkpoint would be restored after a divergence, or
// pointed at after a failed save). Nothing is removed when the run continues from that directory.
void clear_replaced_run(const TrainOptions& o) {
    namespace fs = std::filesystem;
    if (!o.overwrite || resumes_in_place(o)) return;
    auto remove = [&](const fs::path& path) {
        std::error_code ec;
        fs::remove_all(path, ec);
        if (ec)
            throw Error("--overwrite: cannot remove " + path.string() + " (" + ec.message() +
                        "); remove it, or choose another --out");
    };
    for (const char* f : kRunFiles) remove(fs::path(o.out) / f);
    remove(fs::path(o.out) / "checkpoint.tmp"); // a save that died half-way
}

// Can this process create a file at `path` (and remove it again)?
bool can_create(const std::filesystem::path& path) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    std::fclose(f);
    std::filesystem::remove(path);
    return true;
}

// Whether `path` (or, for a file not yet there, its directory) is on the file system of `dir`.
bool same_filesystem(const std::string& dir, const std::string& path) {
    std::filesystem::path p(path);
    if (!p.has_filename()) p = p.parent_path(); // "w/", a folder: judged by where it goes
    const std::string where = p.has_parent_path() ? p.parent_path().string() : ".";
    struct stat a {
    }, b{};
    return ::stat(dir.c_str(), &a) == 0 && ::stat(where.c_str(), &b) == 0 && a.st_dev == b.st_dev;
}

// What a run adds to --out, in bytes: only what it adds, so a run that writes kilobytes fits a
// small disk. Checkpoints hold fp32 master, m and v of the whole model (12 bytes a parameter, from
// every rank into this one directory); a save writes the new one beside the previous, so two at
// once — or one more when a checkpoint is already there (a resume or --overwrite replaces it in
// place). The report is ~4 KB plus ~6 KB a rank; a step's log row ~300 bytes, ~1 KB a rank with
// --log-memory.
double added_bytes(const TrainOptions& o, double params, int ranks) {
    const bool checkpoints = o.save_every > 0 || (o.stop_after > 0 && o.stop_after < o.steps);
    const bool one_there = has_checkpoint(o.out);
    const double checkpoint = 12 * params + 4096.0 * ranks;
    const double report = 4096 + 6144.0 * ranks;
    const double log = double(o.steps) * (o.log_memory ? 1024.0 * ranks : 300.0);
    return (checkpoints ? (one_there ? 1 : 2) * checkpoint : 0) + report + log;
}

// An output flag's path that is one of the run's own files (its log, report, profile or a
// checkpoint, or inside one) would overwrite it or be overwritten by it.
void check_not_run_file(const char* flag, const std::string& path, const TrainOptions& o) {
    std::vector<std::string> own = {"report.json", "steps.jsonl", "profile.json"};
    own.insert(own.end(), std::begin(kCheckpointDirs), std::end(kCheckpointDirs));
    for (const std::string& f : own) {
        if (is_within(path, (std::filesystem::path(o.out) / f).string()))
            throw UsageError(fmt::format("{} {} is the run's own {} (in --out {}), which the run "
                                         "writes; choose a path outside it",
                                         flag, path, f, o.out));
    }
}

// Every output is checked before step 1, so no run trains for hours and then cannot write: the run
// directory (every rank writes its checkpoint file there) and --save-weights (rank 0 writes it)
// must be writable, with room for what they will hold.
void check_outputs(const TrainOptions& o, const ModelConfig& config, int ranks, int rank) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec || !can_create(fs::path(o.out) / (".write-test-" + std::to_string(rank))))
        throw UsageError("--out " + o.out + " is not a writable directory" +
                         (ec ? " (" + ec.message() + ")" : "") + "; choose another --out");
    const double params = double(config.num_params_stored()); // checkpoints hold the padding
    const bool weights_here = !o.save_weights.empty() && same_filesystem(o.out, o.save_weights);
    const double need_out = added_bytes(o, params, ranks) + (weights_here ? 4 * params : 0);
    const fs::space_info space = fs::space(o.out, ec);
    if (!ec && double(space.available) < need_out)
        throw UsageError(fmt::format("--out {}: {} free, and this run will write about {} "
                                     "there; free some space or choose another --out",
                                     o.out, short_bytes(double(space.available)),
                                     short_bytes(need_out)));
    if (!o.trace.empty()) check_not_run_file("--trace", o.trace, o);
    if (!o.save_weights.empty()) check_not_run_file("--save-weights", o.save_weights, o);
    if (rank == 0 && !o.trace.empty() && fs::is_directory(o.trace, ec))
        throw UsageError("--trace " + o.trace + " is a directory; give a file name, e.g. " +
                         (fs::path(o.trace) / "trace.json").string());
    if (rank == 0 && !o.trace.empty() && !can_create(o.trace + ".write-test"))
        throw UsageError("--trace " + o.trace +
                         ": cannot create a file there; create the directory or choose a "
                         "writable path");
    if (rank != 0 || o.save_weights.empty()) return;
    // A folder (Hugging Face's layout) is created now, so its space can be asked for.
    const fs::path w(o.save_weights);
    const bool folder = is_weights_folder(o.save_weights);
    if (folder) fs::create_directories(w, ec);
    const fs::path dir = folder ? w : w.has_parent_path() ? w.parent_path() : fs::path(".");
    if ((folder && ec) ||
        !can_create(folder ? (w / ".write-test").string() : w.string() + ".write-test"))
        throw UsageError("--save-weights " + o.save_weights + ": cannot create a file in " +
                         dir.string() + (ec ? " (" + ec.message() + ")" : "") +
                         "; create the directory or choose a writable path");
    const fs::space_info wspace = fs::space(dir, ec);
    if (!ec && double(wspace.available) < 4 * params + (1 << 20))
        throw UsageError(fmt::format("--save-weights {}: {} free there, the weights need "
                                     "{}; free some space or choose another path",
                                     o.save_weights, short_bytes(double(wspace.available)),
                                     short_bytes(4 * params)));
}

// --reproducible multiplies with OpenBLAS, whose products shardlab threads in fixed blocks
// (kernels/cpu/gemm.cpp); oneDNN's own threading changes bits with the thread count.
DeviceOptions run_device(const TrainOptions& o) {
    DeviceOptions d = o.device;
    if (o.reproducible && d.device == "cpu") d.gemm = "openblas";
    return d;
}

// The flags, alone and with each other: checked before any file is read.
void check_flags(const TrainOptions& o, Precision precision) {
    check_device_options(o.device);
    if (o.reproducible && o.device.device == "cpu" &&
        (o.device.gemm.empty() ? cpu::default_gemm_request() : o.device.gemm) == "onednn")
        throw UsageError("--reproducible multiplies with OpenBLAS: oneDNN's threading gives other "
                         "bits at other thread counts; drop --gemm onednn (or SHARDLAB_GEMM)");
    check_stage(o.zero, o.prefetch);
    if (o.calibrate && !o.profile.empty())
        throw UsageError("--calibrate measures the profile the run is priced with; drop it or "
                         "--profile " +
                         o.profile);
    // Step 1 at the peak rate is AdamW's largest update (1 - beta1^t is smallest at t = 1): its
    // settings either hold there or the run stops now, not at the end of warmup.
    adamw_step(adamw_config(o), o.lr, 1, true, 1.0f);
    // A changed --loss-scale (its default cannot be told from one given) would do nothing.
    if (precision != Precision::fp16 && o.loss_scale != TrainOptions{}.loss_scale)
        throw UsageError(fmt::format("--loss-scale {} applies to --precision fp16 only ({} "
                                     "needs no loss scaling); drop it or use --precision fp16",
                                     o.loss_scale, o.precision));
    if (o.micro_batch < 1 || o.steps < 1 || o.grad_accum < 1)
        throw UsageError("--micro-batch, --steps and --grad-accum must be at least 1");
    if (o.schedule != "cosine" && o.schedule != "linear" && o.schedule != "constant")
        throw UsageError("--schedule must be cosine, linear or constant");
    if (o.val_every < 0 || o.val_batches < 1 || o.save_every < 0 || o.sample < 0)
        throw UsageError("--val-every, --save-every and --sample must be >= 0, --val-batches >= 1");
    if (!o.init.empty() && !o.resume.empty())
        throw UsageError("--init " + o.init + " and --resume " + o.resume +
                         " both give the run's weights, and a resume takes them from its "
                         "checkpoint; drop --init");
    if (!o.init.empty() && o.model.fields.any())
        throw UsageError("--init " + o.init +
                         " takes the model's shape from the file; drop --layers, --hidden, "
                         "--heads, --kv-heads, --ffn, --vocab and --seq");
    if (!o.init.empty()) { // ... and its family and head: a preset or --arch would be ignored
        std::vector<std::string> given;
        if (!o.model.arch.empty()) given.push_back("--arch " + o.model.arch);
        if (!o.model.preset.empty()) given.push_back("--preset " + o.model.preset);
        if (o.model.tied_head) given.push_back("--tied-head");
        if (!given.empty())
            throw UsageError(fmt::format("--init {} takes the model from the file (its family, "
                                         "shape and head); drop {}",
                                         o.init, fmt::join(given, " and ")));
    }
}

// The model: from --init's header (each rank reads its part later, in the engine) or the flags.
void resolve_model(const TrainOptions& o, RunSetup& s) {
    if (!o.init.empty()) { // its header checked now; each rank reads its part in the engine
        s.init = std::make_unique<WeightsReader>(o.init, o.model.vocab_multiple);
        s.config = s.init->config();
    } else { // the engine draws each rank's part (initial_values, model/families.h)
        s.config = o.model.config();
    }
    s.seq = s.config.context;
    if (o.sample > 0 && s.config.vocab > 65536)
        throw UsageError(fmt::format("--sample: the model's vocabulary is {}, and a sampled token "
                                     "id past 65535 cannot be stored (tokens are uint16); drop "
                                     "--sample",
                                     s.config.vocab));
}

// The tokens: the default corpus or --data, split 90/10 into training and validation.
void load_data(const TrainOptions& o, RunSetup& s) {
    std::error_code ec; // --data naming the default corpus' folder (as --help does) is that corpus
    if (o.data.empty() || std::filesystem::equivalent(o.data, kDefaultCorpusDir, ec)) {
        s.data = default_corpus(0.1);
    } else {
        const TokenData tokens = load_tokens(o.data);
        s.data = split_train_val(tokens.tokens, 0.1);
        s.byte_level = tokens.byte_level;
    }
}

// The data against the model and the batch: every token id inside the vocabulary, a global batch
// of distinct training windows, and at least one validation pass.
void check_data_fits(const TrainOptions& o, const RunSetup& s, int ranks) {
    int max_token = -1;
    for (const auto* part : {&s.data.train, &s.data.val})
        for (auto t : *part) max_token = std::max(max_token, int(t));
    if (max_token >= s.config.vocab)
        throw UsageError(fmt::format(
            "the data holds token id {} but the model's vocabulary is {}; use --vocab {} or "
            "data tokenized for this model",
            max_token, s.config.vocab, max_token + 1));
    // A step reads a global batch of distinct windows; validation at least one pass of N x B
    // (one sequence under --reproducible, which validates a sequence at a time).
    const std::size_t batch = std::size_t(ranks) * o.micro_batch, global = batch * s.grad_accum,
                      total = s.data.train.size() + s.data.val.size();
    if (TokenWindows(s.data.train, s.seq).count() < global)
        throw UsageError(fmt::format(
            "the data's training part ({} of its {} tokens; the last 10% are kept for "
            "validation) is too small for a global batch of {} ranks x micro-batch {} x "
            "grad-accum {} sequences of {} tokens, each once; use more data, a smaller batch or a "
            "shorter --seq",
            s.data.train.size(), total, ranks, o.micro_batch, global / batch,
            std::int64_t(s.seq) + 1));
    const std::size_t val_need = o.reproducible ? 1 : batch;
    if (TokenWindows(s.data.val, s.seq).count() < val_need)
        throw UsageError(fmt::format(
            "the data's validation part (its last 10%: {} of {} tokens) is shorter than {} "
            "sequence(s) of {} tokens{}; use at least {} tokens of data, or a shorter --seq",
            s.data.val.size(), total, val_need, s.seq + 1,
            o.reproducible
                ? ""
                : fmt::format(" (one pass of {} ranks x micro-batch {})", ranks, o.micro_batch),
            10 * val_need * (s.seq + 1)));
}

// Every check that can fail is made here, before the first message, alike on every rank.
RunSetup prepare(const TrainOptions& o, int ranks, int rank) {
    RunSetup s;
    s.precision = parse_precision(o.precision);
    s.checkpoint = parse_checkpoint(o.checkpoint);
    s.attention = parse_attention(o.attention);
    check_flags(o, s.precision);
    check_run_directory(o);
    check_shard_group(o, ranks, s);
    s.grad_accum = effective_grad_accum(o, ranks);
    resolve_model(o, s);
    load_data(o, s);
    check_data_fits(o, s, ranks);
    check_outputs(o, s.config, ranks, rank); // it creates --out
    if (rank == 0) s.lock = std::make_unique<RunLock>(o.out);
    return s;
}

// The data's fingerprint: what a resume must train on is the same tokens, wherever the file is.
std::string data_fingerprint(const TrainValSplit& d) {
    Sha256 h;
    h.update(d.train.data(), d.train.size() * sizeof(std::uint16_t));
    h.update(d.val.data(), d.val.size() * sizeof(std::uint16_t));
    return h.hex();
}

// The run's settings as report.json records them (and a resume must match), the data by its
// fingerprint.
nlohmann::json run_settings(const TrainOptions& o, const RunSetup& s) {
    nlohmann::json settings = train_options_json(o, config_to_json(s.config), s.seq, s.grad_accum);
    settings["data_sha256"] = s.data_sha256;
    return settings;
}

// Every rank must train the same run: ranks started with other flags (an MPMD launch,
// `mpirun A : B`, or a config file that differs per node) would drift apart silently (ZeRO-0's
// replicas) or hang in the first collective of another shape. Paths may differ per node (the
// data's and the init file's); the data is compared by its fingerprint.
void check_same_settings(const nlohmann::json& settings, int rank, WatchedComm& comm) {
    nlohmann::json mine = settings;
    for (const char* path : {"data", "init", "deepspeed_config"}) mine.erase(path);
    const std::vector<std::string> all = comm.gather(mine.dump(), 0, "every rank's settings");
    if (rank != 0) return;
    for (std::size_t r = 1; r < all.size(); ++r) {
        if (all[r] == all[0]) continue;
        const nlohmann::json theirs = nlohmann::json::parse(all[r]);
        const nlohmann::json first = nlohmann::json::diff(mine, theirs).at(0);
        const nlohmann::json::json_pointer at(first.at("path").get<std::string>());
        const std::string there = theirs.contains(at) ? theirs.at(at).dump() : "absent";
        const std::string here = mine.contains(at) ? mine.at(at).dump() : "absent";
        throw UsageError(fmt::format("rank {} was started with other settings than rank 0: {} is "
                                     "{} there and {} on rank 0; give every rank the same flags, "
                                     "config file and data",
                                     r, at.to_string().substr(1), there, here));
    }
}

// Byte tokens as text; the ids of a tokenizer's tokens (llm.c shards) as numbers: shardlab has no
// tokenizer to decode them, and ids read as bytes would be another text.
std::string printable(const std::vector<std::uint16_t>& tokens, bool byte_level) {
    std::string s;
    if (!byte_level) {
        s = "token ids (the data is not text; decode them with its tokenizer):";
        for (auto t : tokens) s += " " + std::to_string(t);
        return s;
    }
    for (auto t : tokens) s += (t == '\n' || (t >= 32 && t < 127)) ? char(t) : '?';
    return s;
}

// The progress line's view of one step.
StepLine step_line(Precision precision, const nlohmann::json& row, const StepOutcome& s,
                   const MemoryTracker& tracker) {
    StepLine l;
    l.step = row["step"].get<int>();
    l.loss = s.loss, l.lr = row["lr"].get<double>(), l.grad_norm = s.result.grad_norm;
    l.ms = s.seconds * 1e3, l.comm_ms = s.exposed_comm_seconds * 1e3;
    l.tokens_per_s = row["tokens_per_s"].get<double>();
    l.peak_mb = double(tracker.counts().total[int(Arena::device)].peak) / 1e6;
    if (row.contains("val_loss")) l.val_loss = row["val_loss"].get<double>();
    if (s.result.skipped && precision == Precision::fp16)
        l.note = fmt::format("overflow: skipped, loss scale {}", s.result.loss_scale);
    return l;
}

// --trace: the recorder, the traced ops, and the context pointing at the recorder while it lives.
struct TraceSession {
    std::unique_ptr<Tracer> tracer;
    std::unique_ptr<TracedOps> ops;
    DeviceContext* ctx = nullptr;
    TraceSession(const TrainOptions& o, Backend& backend, int rank, WatchedComm& outside) {
        if (o.trace.empty()) return;
        ctx = &backend.context();
        // Every rank's time zero at the same moment, within leaving the barrier.
        outside.barrier("--trace: every rank's time zero");
        tracer = std::make_unique<Tracer>(rank, ctx->compute(), ctx->tracker());
        ops = std::make_unique<TracedOps>(backend.ops(), *tracer);
        ctx->set_tracer(tracer.get());
    }
    ~TraceSession() {
        if (ctx) ctx->set_tracer(nullptr);
    }
    TraceSession(const TraceSession&) = delete;
    TraceSession& operator=(const TraceSession&) = delete;
};

// The tracked peaks over every phase after "init" (the training steps and validation).
MemoryCounts peaks_after_init(const std::vector<PhaseSnapshot>& phases) {
    MemoryCounts out;
    for (const PhaseSnapshot& ph : phases) {
        if (ph.name == "init") continue;
        out.staging.peak = std::max(out.staging.peak, ph.counts.staging.peak);
        out.ram.peak = std::max(out.ram.peak, ph.counts.ram.peak);
        for (std::size_t a = 0; a < kNumArenas; ++a) {
            out.total[a].peak = std::max(out.total[a].peak, ph.counts.total[a].peak);
            for (std::size_t c = 0; c < kNumCategories; ++c)
                out.by_category[a][c].peak =
                    std::max(out.by_category[a][c].peak, ph.counts.by_category[a][c].peak);
        }
    }
    return out;
}

// A run resumed in its own directory from checkpoint.prev (the latest one not usable): that one
// becomes the latest, so that the rotation of later saves keeps it until a newer one is in place.
void keep_resumed_checkpoint(const TrainOptions& o) {
    const std::string aside = promote_resumed_previous(o.out, find_checkpoint_dir(o.resume));
    if (!aside.empty())
        fmt::print(stderr,
                   "shardlab: {}/checkpoint, which was not resumed from, is kept as {}; the "
                   "checkpoint resumed from is {}/checkpoint now\n",
                   o.out, aside, o.out);
}

// What the session is built from: the request as prepare() resolved it.
SessionSpec session_spec(const TrainOptions& o, const RunSetup& s) {
    SessionSpec spec;
    spec.config = s.config;
    spec.micro_batch = o.micro_batch, spec.seq = s.seq, spec.grad_accum = s.grad_accum;
    spec.precision = s.precision, spec.checkpoint = s.checkpoint, spec.attention = s.attention;
    spec.zero = ZeroOptions{o.zero, s.precision, o.prefetch, o.grad_clip, o.loss_scale};
    spec.adam = adamw_config(o);
    spec.offload = o.offload;
    spec.reproducible = o.reproducible;
    spec.shard_group = s.shard_group;
    spec.secondary_shard = !o.secondary_shard.empty();
    spec.collective_timeout = o.collective_timeout;
    return spec;
}

// The run's first line: what trains, on how many ranks, how.
void announce(const TrainOptions& o, const RunSetup& s, const TrainSession& session, int N) {
    const int S = session.shard_size();
    const std::string groups =
        S < N ? fmt::format(" sharded in groups of {} x {} replicas", S, N / S) : "";
    fmt::print("training {} on {} rank(s): ZeRO-{}{}{}, {}, micro-batch {} x {} tokens, "
               "grad-accum {}, {} steps, {} attention\n",
               s.config.describe(), N, o.zero, o.offload ? " + offload" : "", groups, o.precision,
               o.micro_batch, s.seq, s.grad_accum, o.steps, attention_name(s.attention));
}

// One step's row of steps.jsonl (validation and memory are added by the loop when they run).
nlohmann::json step_row(int step, float rate, const StepOutcome& so, double tokens_per_step) {
    nlohmann::json row = {{"step", step + 1},
                          {"loss", so.loss},
                          {"lr", rate},
                          {"grad_norm", so.result.grad_norm},
                          {"ms", so.seconds * 1e3},
                          {"exposed_comm_ms", so.exposed_comm_seconds * 1e3},
                          {"compute_ms", (so.seconds - so.exposed_comm_seconds) * 1e3},
                          {"tokens_per_s", tokens_per_step / so.seconds}};
    if (so.result.skipped) row["skipped"] = true;
    return row;
}

// --trace's file: every rank's events gathered to rank 0 and written there. A rank missing from
// the gather ends the job (the watchdog's Error is not a write failure); a trace that cannot be
// written costs the trace, not the report and weights. Returns why it was not written ("": it was).
std::string write_trace_file(const TrainOptions& o, const TraceSession& trace, int trace_from,
                             int last_traced, const nlohmann::json& config, bool lead,
                             WatchedComm& outside) {
    trace.tracer->enable(false);
    trace.ctx->synchronize();
    const std::vector<std::string> parts = gather_trace(*trace.tracer, outside);
    try {
        write_trace(o.trace, parts, config);
        if (lead && last_traced > trace_from)
            fmt::print("trace of steps {}-{}: {} (open it in ui.perfetto.dev or "
                       "chrome://tracing)\n",
                       trace_from + 1, last_traced, o.trace);
        if (lead && last_traced <= trace_from)
            fmt::print("trace: {} holds no step: the run stopped before step {}, the first "
                       "one traced\n",
                       o.trace, trace_from + 1);
    } catch (const Error& e) {
        fmt::print(stderr, "shardlab: warning: no trace written: {}\n", e.what());
        return e.what();
    }
    return "";
}

// --sample: tokens generated from the trained weights after a prompt from the validation data.
void print_sample(const TrainOptions& o, const RunSetup& s, Backend& backend, ZeroEngine& engine,
                  bool lead) {
    const std::unique_ptr<Model> sampler =
        make_model(s.config, 1, s.seq, CheckpointPolicy{}, param_dtype(s.precision),
                   backend.context(), backend.ops(), s.attention);
    const std::vector<std::uint16_t> prompt(
        s.data.val.begin(), s.data.val.begin() + std::min<std::size_t>(64, s.data.val.size()));
    const auto text = generate(*sampler, engine, prompt, o.sample, 0.8f, o.seed,
                               [&] { engine.begin_micro_batch(false); });
    if (lead)
        fmt::print("\nsample ({} tokens after a {}-token prompt from the validation "
                   "text):\n---\n{}\n---\n",
                   o.sample, prompt.size(), printable(text, s.byte_level));
}

// Every rank's report gathered to rank 0, which prints them and writes report.json beside the
// step log (null on the other ranks).
void write_run_report(const TrainOptions& o, const nlohmann::json& config,
                      const nlohmann::json& mine, const StepsLog* steps_log, int first,
                      long skipped_steps, const FinalWeights& weights,
                      const std::string& trace_error, Communicator& comm, WatchedComm& outside) {
    const auto reports = gather_reports(mine, outside);
    if (!steps_log) return;
    for (const auto& rep : reports) print_rank_report(rep, comm.node_layout().nodes() > 1);
    fmt::print("\nfinal fp32 master weights sha256 {}\n", weights.hash);
    nlohmann::json report = {{"config", config},
                             {"steps", steps_log->rows_after(first)},
                             {"ranks", reports},
                             {"node_layout", comm.node_layout().describe()},
                             {"skipped_steps", skipped_steps},
                             {"final_params_sha256", weights.hash}};
    if (!weights.save_error.empty()) report["save_weights_error"] = weights.save_error;
    if (!trace_error.empty()) report["trace_error"] = trace_error;
    write_json_file((std::filesystem::path(o.out) / "report.json").string(), report);
    fmt::print("report: {}/report.json, per step: {}/steps.jsonl\n", o.out, o.out);
}

// --save-weights failed (on the lead, which writes the file): what is left and how to get the
// weights back.
void print_save_error(const TrainOptions& o, const std::string& error) {
    const bool checkpoint = has_checkpoint(o.out);
    fmt::print(stderr,
               "shardlab: --save-weights {} was not written: {}. Nothing was left there; the "
               "report and step log are in {}. {}\n",
               o.save_weights, error, o.out,
               checkpoint ? fmt::format("Its checkpoint is there too: once there is room, "
                                        "`shardlab checkpoint export {} --out FILE` writes "
                                        "the weights of its step",
                                        o.out)
                          : "No checkpoint was saved (--save-every), so the weights are lost: "
                            "free some space before the next run");
}

int train_loop(const TrainOptions& o, RunSetup& s, Backend& backend, Communicator& comm,
               WatchedComm& outside) {
    const int N = comm.size(), rank = comm.rank(), B = o.micro_batch, T_ = s.seq;
    const int A = s.grad_accum;
    const bool lead = rank == 0;
    DeviceContext& ctx = backend.context();
    MemoryTracker& tracker = ctx.tracker();
    nlohmann::json config = run_settings(o, s);
    config["global_batch_seqs"] = N * B * s.grad_accum;
    ResidentPeaks resident;
    // Before the model is built, and after the heap that reading the data freed is handed back:
    // measured before the trim, it counted pages the process no longer held a moment later.
    release_free_heap();
    resident.baseline = current_resident_bytes();
    resident.baseline_code = current_resident_code_bytes();
    reset_peak_resident();
    const TraceSession trace(o, backend, rank, outside);
    Ops& ops = trace.ops ? static_cast<Ops&>(*trace.ops) : backend.ops();
    // Each rank makes or reads only what it holds; a bad value in a rank's part of an --init
    // file stops every rank alike. The session drops the reader once the engine holds its part.
    const ParamLayout layout(s.config);
    InitialValues init = initial_values(s.config, layout, o.seed);
    if (s.init)
        init = [reader = std::shared_ptr<WeightsReader>(std::move(s.init))](
                   int u, std::uint64_t b, std::uint64_t c, float* out) {
            reader->read(u, b, c, out);
        };
    TrainSession session(session_spec(o, s), backend, comm, ops, std::move(init), &outside);
    ZeroEngine& engine = session.engine();

    const int first =
        o.resume.empty() ? 0 : session.resume(o.resume, config, o.stop_after, outside);
    if (lead && resumes_in_place(o)) keep_resumed_checkpoint(o);
    engine.take_exposed_comm_seconds();
    session.reset_comm_stats();
    tracker.snapshot("init");
    resident.init = resident_phase(tracker, tracker.phases().back().counts);
    reset_peak_resident();
    const Plan plan = session.plan();
    // The prediction is made now, before the steps: a profile that cannot price this run (a
    // missing link class or dtype) fails here rather than after the training.
    std::optional<TimePrediction> predicted;
    if (s.calibrated) predicted = predict_time(plan, *s.calibrated, rank);
    if (!o.profile.empty()) predicted = predict_time(plan, load_profile(o.profile), rank);
    const std::string profile_name =
        s.calibrated ? (std::filesystem::path(o.out) / "profile.json").string() : o.profile;

    const TokenWindows train(s.data.train, T_), val(s.data.val, T_);
    const LrSchedule lr = lr_schedule(o);

    std::filesystem::create_directories(o.out);
    if (lead && s.calibrated) write_json_file(profile_name, profile_to_json(*s.calibrated));
    std::unique_ptr<StepsLog> steps_log;
    if (lead)
        steps_log = std::make_unique<StepsLog>(
            (std::filesystem::path(o.out) / "steps.jsonl").string(), first);
    if (lead && !o.quiet) announce(o, s, session, N);

    RunTiming timing;
    const long skipped_before = engine.skipped_steps(); // a resumed run's count includes earlier
    std::unique_ptr<Progress> progress;
    int end = o.stop_after > 0 ? std::min(o.stop_after, o.steps) : o.steps;
    if (lead && !o.quiet)
        progress = std::make_unique<Progress>(first, end, o.steps, o.log_every, stdout);
    // --trace records --trace-steps steps after the first (which warms caches up), or from the
    // first when the run is not longer than that.
    const int trace_from = first + (end - first > o.trace_steps ? 1 : 0);
    auto traced = [&](int step) {
        return trace.tracer && step >= trace_from && step < trace_from + o.trace_steps;
    };
    const StopRequest stop_request; // Ctrl-C / SIGTERM / SIGUSR1: checkpoint, then stop
    int stopped_by = 0;
    std::string diverged; // why the run stopped early, when it diverged
    DivergenceGuard guard(o.out, o.max_bad_steps, s.precision == Precision::fp16, lead);
    for (int step = first; step < end; ++step) {
        const float rate = lr.at(step);
        if (trace.tracer) trace.tracer->enable(traced(step));
        const StepOutcome so = session.step(step, train, rate);
        timing.add(so.seconds, so.exposed_comm_seconds);
        nlohmann::json row = step_row(step, rate, so, double(N) * A * B * T_);
        if (so.result.skipped && lead && s.precision != Precision::fp16 && progress)
            progress->clear();
        if (so.result.skipped && lead && s.precision != Precision::fp16)
            fmt::print(stderr,
                       "shardlab: step {}: the gradient norm is {}: the step was skipped and no "
                       "weight changed\n",
                       step + 1, std::isnan(so.result.grad_norm) ? "NaN" : "Inf");
        const bool last = step + 1 == end;
        if ((o.val_every && (step + 1) % o.val_every == 0) || (last && o.val_every == 0))
            row["val_loss"] = session.validate(val, o.val_batches);
        if (o.log_memory) row["memory"] = memory_sample(tracker, outside);
        if (lead) {
            steps_log->append(row);
            if (progress) progress->step(step_line(s.precision, row, so, tracker));
        }
        guard.after_step(step + 1, so.loss, so.result); // every rank decides alike
        if (guard.diverged()) {
            diverged = guard.stop_message(step + 1);
            end = step + 1;
        }
        // A run stopped early — by --stop-after or a signal — leaves a checkpoint, unless its
        // last steps were not finite: then, as for one that diverged, it keeps the checkpoint
        // it had (no state of a bad step is saved).
        stopped_by = step + 1 < end ? session.agree_on_stop(stop_request.requested(), outside) : 0;
        if (stopped_by) end = step + 1;
        const bool stopping_early = step + 1 == end && end < o.steps;
        if (((o.save_every && (step + 1) % o.save_every == 0) || stopping_early) &&
            !guard.in_bad_streak()) {
            session.save(o.out, config, step + 1, outside);
            guard.saved();
        }
        if (trace.tracer && traced(step)) { // turn this step's events into times now
            trace.tracer->enable(false);
            ctx.synchronize();
            trace.tracer->resolve();
        }
        if ((stopped_by || !diverged.empty()) && progress) progress->clear();
        if (stopped_by && lead)
            fmt::print(stderr,
                       "shardlab: stopped by {} after step {}: {}; continue with --resume {}\n",
                       signal_name(stopped_by), end,
                       guard.in_bad_streak() ? "no checkpoint saved, as the last steps were not "
                                               "finite; the previous checkpoint is kept"
                                             : "checkpoint saved",
                       o.out);
    }
    if (lead && !diverged.empty()) fmt::print(stderr, "{}\n", diverged);
    // Ended on a finite step: the last checkpoint's predecessor is no longer needed.
    if (lead && !guard.in_bad_streak()) drop_previous_checkpoint(o.out);

    // What the report shows is measured here, before consolidation and sampling move more bytes.
    const MemoryCounts memory = tracker.counts();
    const CommStats stats = session.comm_stats();
    const std::vector<PhaseSnapshot> phases = tracker.phases();
    const ReservedBytes reserved{tracker.allocator(Arena::device).peak_reserved(),
                                 tracker.allocator(Arena::host).peak_reserved()};
    const HostDeviceTraffic traffic{session.updater().device_to_host_bytes(),
                                    session.updater().host_to_device_bytes()};
    const int steps_run = end - first;
    resident.training = resident_phase(tracker, peaks_after_init(phases));
    reset_peak_resident();
    std::optional<DriverMemory> driver;
    if (const auto in_use = backend.device_bytes_in_use())
        driver = DriverMemory{*in_use, tracker.allocator(Arena::device).reserved()};

    progress.reset();
    const std::string trace_error =
        trace.tracer
            ? write_trace_file(o, trace, trace_from, std::min(end, trace_from + o.trace_steps),
                               config, lead, outside)
            : "";
    // A diverged run's weights are not worth a file (its checkpoint says which state to use).
    const FinalWeights weights = hash_and_save_weights(
        engine, s.config, diverged.empty() ? o.save_weights : "", lead, o.save_shard_size);
    if (o.sample > 0 && !stopped_by && diverged.empty()) print_sample(o, s, backend, engine, lead);

    tracker.snapshot("end");
    resident.end = resident_phase(tracker, tracker.phases().back().counts);
    const RankMeasurements measured{
        backend.describe(),     driver,  memory, stats, phases, reserved, traffic, timing,
        engine.skipped_steps(), resident};
    const int steps_applied = steps_run - int(engine.skipped_steps() - skipped_before);
    nlohmann::json mine = rank_report(rank, measured, plan, steps_run, steps_applied);
    // The attention kernels this rank ran (on a GPU, the forms auto timed: ranks may differ, their
    // bits may not).
    mine["attention_kernels"] =
        s.attention == AttentionKind::flash
            ? backend.ops().flash_attention_kernels(param_dtype(s.precision), s.config.head_dim())
            : attention_name(s.attention);
    if (predicted) add_time_prediction(mine, *predicted, profile_name);
    write_run_report(o, config, mine, steps_log.get(), first, engine.skipped_steps(), weights,
                     trace_error, comm, outside);
    if (!weights.save_error.empty()) { // the lead's alone: it wrote the file
        print_save_error(o, weights.save_error);
        return 1;
    }
    if (!diverged.empty()) return 3;
    return stopped_by ? 128 + stopped_by : 0; // the shell's code for "ended by that signal"
}
} // namespace

int run_training(const TrainOptions& o) {
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    RunSetup setup;
    test_hook_stop("start", rank);
    WatchedComm outside(MPI_COMM_WORLD, o.collective_timeout);
    collectively([&] { setup = prepare(o, ranks, rank); }, outside); // files differ per node
    // The fingerprint reads every token: made before the runtime baseline is measured, so the pages
    // of a mapped data file it brings in belong to the baseline (the token data), not to init.
    collectively(
        [&] {
            setup.data_sha256 = data_fingerprint(setup.data);
            check_same_settings(run_settings(o, setup), rank, outside);
        },
        outside);
    collectively(
        [&] {
            if (rank == 0) clear_replaced_run(o);
        },
        outside);
    const std::unique_ptr<Backend> backend = make_backend(run_device(o), MPI_COMM_WORLD, outside);
    const std::unique_ptr<Communicator> comm = backend->communicator(MPI_COMM_WORLD);
    comm->set_collective_timeout(o.collective_timeout);
    if (o.ranks_per_node > 0) comm->set_node_layout(NodeLayout::blocks(ranks, o.ranks_per_node));
    if (o.shard_group == "node") // every rank sees the same layout, so refuses alike
        collectively([&] { setup.shard_group = node_shard_size(comm->node_layout()); }, outside);
    if (o.calibrate) {
        if (rank == 0 && !o.quiet) fmt::print("calibrating this machine for the run ...\n");
        setup.calibrated = calibrate_for_run(run_device(o), setup.config, o.micro_batch,
                                             setup.precision, comm->node_layout());
    }
    return train_loop(o, setup, *backend, *comm, outside);
}

} // namespace shardlab
