// Saving every rank's slices atomically, and reading any ranges back at any rank count.
#include "optim/checkpoint.h"

#include "core/error.h"
#include "core/json_depth.h"
#include "core/read_file.h"
#include "core/test_hook.h"
#include "model/model_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace shardlab {

namespace fs = std::filesystem;

namespace {
// The keys that must match for a continuation of the same training: the model, the numerics
// (--reproducible and the attention kernel included: each changes the bits), the schedule and
// the data with its global batch (how it is split over ranks, micro-batches and ZeRO stages may
// change).
const char* kMustMatch[] = {
    "model",        "precision",   "global_batch_seqs", "seq",      "lr",    "warmup", "steps",
    "min_lr_ratio", "schedule",    "weight_decay",      "beta1",    "beta2", "eps",    "grad_clip",
    "seed",         "data_sha256", "reproducible",      "attention"};

// Writes bytes to path and makes them durable; throws Error naming the path and the reason.
void write_durably(const fs::path& path, const std::string& bytes) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    int err = f ? 0 : errno;
    if (f && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) err = errno;
    if (f && !err && (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0)) err = errno;
    if (f && std::fclose(f) != 0 && !err) err = errno;
    if (err)
        throw Error("cannot write checkpoint file '" + path.string() +
                    "': " + write_failure(err, "check that the run directory is writable") +
                    " (the previous checkpoint is kept)");
}

// This rank's slice of every unit, cut from the state it owns (which covers the slice at every
// ZeRO stage: the whole unit at stage 0, exactly the slice otherwise).
CheckpointFile slices(const ZeroEngine::OwnedState& s, const std::vector<std::uint64_t>& numel,
                      int ranks, int rank) {
    CheckpointFile f{rank, ranks, s.step, s.iteration, s.loss_scale, s.good_steps, s.skipped, {}};
    for (std::size_t u = 0; u < numel.size(); ++u) {
        const ElementRange r = stored_range(numel[u], ranks, rank);
        check(r.begin >= s.offset[u] && r.begin + r.count <= s.offset[u] + s.master[u].size(),
              fmt::format("internal: unit {}'s slice [{}, +{}) is not in the owned range", u,
                          r.begin, r.count));
        auto cut = [&](const std::vector<float>& v) {
            const auto from = v.begin() + std::ptrdiff_t(r.begin - s.offset[u]);
            return std::vector<float>(from, from + std::ptrdiff_t(r.count));
        };
        f.units.push_back({numel[u], r, cut(s.master[u]), cut(s.m[u]), cut(s.v[u])});
    }
    return f;
}

// wte's stored rows: the vocabulary padded to the run's "vocab_multiple" (absent in checkpoints
// written before padding existed: 1).
int vocab_multiple_of(const nlohmann::json& config) {
    const nlohmann::json m = config.value("vocab_multiple", nlohmann::json(1));
    return m.is_number_integer() ? m.get<int>() : 1;
}
int stored_vocab_rows(const nlohmann::json& config) {
    const nlohmann::json model = config.value("model", nlohmann::json());
    const nlohmann::json v =
        model.is_object() ? model.value("vocab", nlohmann::json(0)) : nlohmann::json(0);
    ModelConfig c;
    c.vocab = v.is_number_integer() ? v.get<int>() : 0;
    c.vocab_multiple = vocab_multiple_of(config);
    return c.padded_vocab();
}

// The padding is a layout, not a model: a checkpoint resumes under any --vocab-multiple that gives
// wte the same rows, and is refused, naming the flag, under one that does not.
void check_vocab_padding(const std::string& cdir, const nlohmann::json& saved,
                         const nlohmann::json& now) {
    const int saved_rows = stored_vocab_rows(saved), now_rows = stored_vocab_rows(now);
    if (saved_rows == now_rows) return;
    const int saved_multiple = vocab_multiple_of(saved);
    throw UsageError(fmt::format(
        "checkpoint '{}' stores the token embedding with {} rows (the vocabulary padded to a "
        "multiple of {}), this run with {} (--vocab-multiple {}); resume with --vocab-multiple {}",
        cdir, saved_rows, saved_multiple, now_rows, vocab_multiple_of(now), saved_multiple));
}

// A run's "model", with "arch" as a checkpoint written before it was recorded means: gpt2.
nlohmann::json model_of(const nlohmann::json& config) {
    nlohmann::json model = config.value("model", nlohmann::json());
    if (model.is_object() && !model.contains("arch")) model["arch"] = "gpt2";
    return model;
}

// What a checkpoint written before a key was recorded ran with: its only value then.
nlohmann::json saved_setting(const nlohmann::json& config, const std::string& key) {
    if (key == "model") return model_of(config);
    if (!config.contains(key) && key == "reproducible") return false;
    if (!config.contains(key) && key == "attention") return "materialize";
    return config.value(key, nlohmann::json());
}

// The flag that gives a run the checkpoint's setting `key` (a config key, "min_lr_ratio" for
// --min-lr-ratio), for the message refusing a resume that differs.
std::string resume_hint(const std::string& key, const nlohmann::json& saved) {
    if (key == "model")
        return "resume with the model it was trained with (the same --preset or model flags)";
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (saved.is_boolean()) return (saved.get<bool>() ? "resume with " : "resume without ") + flag;
    if (saved.is_string()) return "resume with " + flag + " " + saved.get<std::string>();
    // The settings are fp32 kept as doubles (0.10000000149011612): written as fp32's shortest.
    if (saved.is_number_float() && double(float(saved.get<double>())) == saved.get<double>())
        return fmt::format("resume with {} {}", flag, float(saved.get<double>()));
    return "resume with " + flag + " " + saved.dump();
}

// How to resume with the checkpoint's global batch G: a rank count N that divides G can (pick the
// micro-batch and accumulation), another cannot, so the advice names the counts that can.
std::string global_batch_hint(const nlohmann::json& saved, const nlohmann::json& config) {
    const std::int64_t G = saved.is_number_integer() ? saved.get<std::int64_t>() : 0;
    const std::int64_t per_rank = std::int64_t(config.value("micro_batch", 1)) *
                                  config.value("grad_accum", 1),
                       N = per_rank > 0
                               ? config.value("global_batch_seqs", std::int64_t(0)) / per_rank
                               : 0;
    if (G <= 0 || N <= 0 || G % N == 0)
        return fmt::format("choose --micro-batch / --grad-accum (or --global-batch) so that ranks "
                           "x micro-batch x grad-accum = {}",
                           saved.dump());
    std::vector<std::int64_t> counts;
    for (std::int64_t d = 1; d <= G && counts.size() < 8; ++d)
        if (G % d == 0) counts.push_back(d);
    return fmt::format(
        "{} ranks cannot make {} sequences ({} does not divide it): resume on a rank "
        "count that does ({}{})",
        N, G, N, fmt::join(counts, ", "), counts.back() < G ? ", ..." : "");
}

void check_compatible(const std::string& cdir, const nlohmann::json& meta,
                      const nlohmann::json& config, const std::vector<std::uint64_t>& numel) {
    if (model_of(meta["config"]) == model_of(config))
        check_vocab_padding(cdir, meta["config"], config);
    // Every difference at once: a resume refused for one would otherwise be retried per setting.
    std::vector<std::string> differences;
    for (const char* key : kMustMatch) {
        const auto saved = saved_setting(meta["config"], key);
        const auto now =
            std::string(key) == "model" ? model_of(config) : config.value(key, nlohmann::json());
        if (saved == now) continue;
        if (std::string(key) == "data_sha256")
            differences.push_back(fmt::format(
                "checkpoint '{}' was trained on other data than {} (token fingerprints {} and "
                "{}); resume with the data it was trained on",
                cdir, config.value("data", std::string("this run's")),
                saved.is_string() ? saved.get<std::string>().substr(0, 12) : "(none)",
                now.is_string() ? now.get<std::string>().substr(0, 12) : "(none)"));
        else if (std::string(key) == "global_batch_seqs")
            differences.push_back(fmt::format(
                "checkpoint '{}' was trained with a global batch of {} sequences, this run has "
                "{}; {}",
                cdir, saved.dump(), now.dump(), global_batch_hint(saved, config)));
        else
            differences.push_back(fmt::format("checkpoint '{}' was written with {} = {}, this run "
                                              "has {}; {}",
                                              cdir, key, saved.dump(), now.dump(),
                                              resume_hint(key, saved)));
    }
    if (differences.size() == 1) throw UsageError(differences.front());
    if (!differences.empty())
        throw UsageError(fmt::format("this run differs from its checkpoint in {} settings:\n  {}",
                                     differences.size(), fmt::join(differences, "\n  ")));
    if (meta.value("units", nlohmann::json()) != nlohmann::json(numel))
        throw UsageError("checkpoint '" + cdir +
                         "' holds units of other sizes than this model's; it is corrupt");
}
} // namespace

void save_checkpoint(const std::string& dir, const nlohmann::json& config, int ranks, int rank,
                     const ZeroEngine::OwnedState& s, const std::vector<std::uint64_t>& numel,
                     WatchedComm& comm, bool keep_previous, bool writes) {
    const fs::path tmp = fs::path(dir) / "checkpoint.tmp", final_dir = fs::path(dir) / "checkpoint",
                   prev = fs::path(dir) / "checkpoint.prev";
    const bool lead = comm.rank() == 0;
    if (lead) fs::remove_all(tmp); // a half-written one from a run that died mid-save
    comm.barrier("checkpoint save: checkpoint.tmp cleared");
    const std::string bytes = writes ? encode_checkpoint_file(slices(s, numel, ranks, rank)) : "";
    // Every rank must have written its file before the new checkpoint replaces the old one.
    int ok = 1;
    std::string why;
    try {
        fs::create_directories(tmp);
        if (writes) write_durably(tmp / fmt::format("rank-{}.bin", rank), bytes);
    } catch (const std::exception& e) {
        ok = 0;
        why = e.what();
    }
    test_hook_stop("save", rank);
    comm.allreduce(&ok, 1, MPI_MIN, "checkpoint save: did every rank write its file");
    if (!ok) {
        std::error_code ec;
        if (writes) fs::remove(tmp / fmt::format("rank-{}.bin", rank), ec); // the space back
        throw Error(why.empty() ? "another rank could not write its checkpoint file (see its "
                                  "message); the previous checkpoint is kept"
                                : why);
    }
    if (lead) { // old -> prev, new -> checkpoint, then drop prev: always one complete one
        nlohmann::json meta{{"format", 2},    {"config", config},
                            {"ranks", ranks}, {"iteration", s.iteration},
                            {"step", s.step}, {"units", numel}};
        // --reproducible: the units' fixed-point exponents, global state (optim/exact_sum.h)
        if (!s.exponents.empty()) meta["exact_exponents"] = s.exponents;
        write_durably(tmp / "meta.json", meta.dump(2) + "\n");
        fs::remove_all(prev);
        if (fs::exists(final_dir)) fs::rename(final_dir, prev);
        fs::rename(tmp, final_dir);
        if (!keep_previous) fs::remove_all(prev);
    }
    comm.barrier("checkpoint save: the new checkpoint in place");
}

void drop_previous_checkpoint(const std::string& dir) {
    const fs::path current = fs::path(dir) / "checkpoint", prev = fs::path(dir) / "checkpoint.prev";
    if (fs::exists(prev) && fs::exists(current / "meta.json")) fs::remove_all(prev);
}

namespace {
// The latest checkpoint, if any, moved to `aside` (replacing an older one there).
void move_latest_aside(const fs::path& current, const fs::path& aside) {
    if (!fs::exists(current)) return;
    fs::remove_all(aside);
    fs::rename(current, aside);
}
} // namespace

int set_aside_latest_checkpoint(const std::string& dir) {
    const fs::path current = fs::path(dir) / "checkpoint", prev = fs::path(dir) / "checkpoint.prev";
    move_latest_aside(current, fs::path(dir) / "checkpoint.diverged");
    if (!fs::exists(prev / "meta.json")) return 0;
    fs::rename(prev, current);
    return read_checkpoint_meta(current.string()).value("iteration", 0);
}

std::string earlier_checkpoint_hint(const std::string& cdir) {
    const fs::path path = fs::absolute(cdir).lexically_normal();
    const fs::path prev = path.parent_path() / "checkpoint.prev";
    std::error_code ec;
    if (path.filename() == "checkpoint" && fs::exists(prev / "meta.json", ec)) {
        int step = -1;
        try {
            step = read_checkpoint_meta(prev.string()).value("iteration", -1);
        } catch (const std::exception&) {
        }
        return step >= 0 ? fmt::format("resume from {} (step {}) instead", prev.string(), step)
                         : fmt::format("try {}, the checkpoint before it", prev.string());
    }
    return "no earlier checkpoint is kept beside it (checkpoint.prev): copy the run's files "
           "again, or start over";
}

std::string promote_resumed_previous(const std::string& dir, const std::string& resumed_from) {
    const fs::path current = fs::path(dir) / "checkpoint", prev = fs::path(dir) / "checkpoint.prev",
                   aside = fs::path(dir) / "checkpoint.rejected";
    std::error_code ec;
    if (!fs::equivalent(resumed_from, prev, ec)) return "";
    move_latest_aside(current, aside);
    fs::rename(prev, current);
    return aside.string();
}

std::string find_checkpoint_dir(const std::string& dir) {
    if (fs::exists(fs::path(dir) / "meta.json")) return dir;
    const fs::path current = fs::path(dir) / "checkpoint", prev = fs::path(dir) / "checkpoint.prev";
    // A save that died between its two renames leaves only the previous checkpoint.
    if (!fs::exists(current / "meta.json") && fs::exists(prev / "meta.json")) return prev.string();
    return current.string();
}

std::string run_directory_of(const std::string& dir) {
    if (!fs::exists(fs::path(dir) / "meta.json")) return dir;
    fs::path path = fs::absolute(dir).lexically_normal();
    if (path.filename().empty()) path = path.parent_path(); // "RUN/checkpoint/"
    return path.parent_path().string();
}

bool has_checkpoint(const std::string& dir) {
    return fs::exists(fs::path(find_checkpoint_dir(dir)) / "meta.json");
}

std::string agree_checkpoint_dir(const std::string& dir, WatchedComm& comm) {
    std::string chosen = comm.rank() == 0 ? find_checkpoint_dir(dir) : std::string();
    int len = int(chosen.size());
    comm.bcast(&len, sizeof len, 0, "resume: the checkpoint's name length");
    chosen.resize(std::size_t(len));
    comm.bcast(chosen.data(), len, 0, "resume: which checkpoint to read");
    return chosen;
}

namespace {
// The top-level fields read without further checks, by type: a hand-edited "ranks": "1" must
// be named, not surface as the JSON library's type error. Absent fields are left to the callers.
void check_meta_types(const std::string& cdir, const nlohmann::json& meta) {
    using json = nlohmann::json;
    if (!meta.is_object())
        throw UsageError("checkpoint '" + cdir + "/meta.json' is not a JSON object; it is corrupt");
    const auto expect = [&](const char* key, bool (*ok)(const json&), const char* what) {
        if (meta.contains(key) && !ok(meta[key]))
            throw UsageError(fmt::format("checkpoint '{}/meta.json': \"{}\" is {} {}, not {}; it "
                                         "is corrupt",
                                         cdir, key, meta[key].type_name(), meta[key].dump(), what));
    };
    const auto integer = [](const json& v) { return v.is_number_integer(); };
    expect("format", integer, "an integer");
    expect("ranks", integer, "an integer");
    expect("iteration", integer, "an integer");
    expect(
        "config", [](const json& v) { return v.is_object(); }, "an object");
    expect(
        "units",
        [](const json& v) {
            return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& n) {
                       return n.is_number_unsigned();
                   });
        },
        "a list of element counts");
}

// meta.json's model, and its rank count, against the rank files beside it: a model far larger
// than the files could hold (fp32 master, m and v: 12 bytes a parameter) is corrupt metadata,
// refused before anything — `checkpoint export`'s layout, say — is sized by it.
void check_meta_fits_files(const std::string& cdir, const nlohmann::json& meta, int ranks) {
    const auto corrupt = [&](const std::string& why) {
        return UsageError("checkpoint '" + cdir + "/meta.json' " + why + "; it is corrupt");
    };
    const fs::path last = fs::path(cdir) / fmt::format("rank-{}.bin", ranks - 1);
    if (!fs::exists(last))
        throw corrupt(fmt::format("says {} ranks wrote it, but there is no {}", ranks,
                                  last.filename().string()));
    double bytes = 0;
    std::string sizes;
    for (int q = 0; q < ranks; ++q) {
        std::error_code ec;
        const auto n = fs::file_size(fs::path(cdir) / fmt::format("rank-{}.bin", q), ec);
        if (ec)
            throw corrupt(
                fmt::format("says {} ranks wrote it, but rank-{}.bin is missing", ranks, q));
        bytes += double(n);
        sizes += fmt::format("{}rank-{}.bin {} bytes", q ? ", " : "", q, n);
    }
    // The units' element counts are what the rank files were written from: fewer bytes than they
    // need means a file was cut short (an interrupted copy), not a wrong model config.
    double elements = 0;
    for (const auto& n : meta["units"]) elements += n.get<double>();
    if (12 * elements > bytes) {
        const fs::path prev = fs::path(cdir).parent_path() / "checkpoint.prev";
        throw UsageError(fmt::format(
            "checkpoint '{}': its rank files hold {:.0f} bytes, fewer than the {:.0f} that "
            "meta.json's {:.0f} elements need (12 bytes each: fp32 master, m and v): a rank file "
            "is truncated ({}); copy the run again{}",
            cdir, bytes, 12 * elements, elements, sizes,
            fs::exists(prev) ? ", or resume from " + prev.string() : ""));
    }
    double params = 0;
    try {
        params = config_from_json(meta["config"].value("model", nlohmann::json{})).num_params_f64();
    } catch (const std::exception& e) {
        throw corrupt(std::string("holds no valid model config (") + e.what() + ")");
    }
    if (12 * params > bytes)
        throw corrupt(fmt::format("describes a model of {:.3g} parameters, but its rank files "
                                  "hold only {:.0f} bytes (12 a parameter are needed)",
                                  params, bytes));
}
} // namespace

nlohmann::json read_checkpoint_meta(const std::string& cdir) {
    std::ifstream in(fs::path(cdir) / "meta.json");
    if (!in)
        throw UsageError("no checkpoint in '" + cdir +
                         "' (no meta.json); point at a run's --out directory");
    nlohmann::json meta;
    try {
        meta = parse_json_bounded(read_rest(in), "checkpoint '" + cdir + "/meta.json'");
    } catch (const nlohmann::json::exception& e) {
        throw UsageError("checkpoint '" + cdir + "/meta.json' is corrupt: " + e.what());
    }
    check_meta_types(cdir, meta);
    if (meta.value("format", 1) != 2)
        throw UsageError("checkpoint '" + cdir +
                         "' was written by an older shardlab (format 1); resume it with that "
                         "version, or start over");
    const int ranks = meta.value("ranks", 0);
    if (ranks < 1 || !meta.contains("config") || !meta["units"].is_array())
        throw UsageError("checkpoint '" + cdir + "/meta.json' is incomplete; it is corrupt");
    check_meta_fits_files(cdir, meta, ranks);
    return meta;
}

std::uint64_t largest_rank_file_bytes(const std::string& cdir) {
    std::uint64_t largest = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cdir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("rank-", 0) == 0 && e.path().extension() == ".bin")
            largest = std::max<std::uint64_t>(largest, e.file_size(ec));
    }
    return largest;
}

ModelConfig checkpoint_model(const nlohmann::json& meta) {
    ModelConfig c = config_from_json(meta["config"]["model"]);
    c.vocab_multiple = vocab_multiple_of(meta["config"]);
    c.validate();
    return c;
}

CheckpointFile read_rank_file(const std::string& cdir, int q, int N,
                              const std::vector<std::uint64_t>& numel) {
    const std::string name = fmt::format("rank-{}.bin", q);
    CheckpointFile f;
    try {
        f = read_checkpoint_file((fs::path(cdir) / name).string());
    } catch (const UsageError&) {
        throw; // an older format: its own advice
    } catch (const Error& e) {
        throw Error(std::string(e.what()) + "; " + earlier_checkpoint_hint(cdir));
    }
    bool slices = f.units.size() == numel.size();
    for (std::size_t u = 0; slices && u < numel.size(); ++u) {
        const ElementRange r = stored_range(numel[u], N, q);
        const CheckpointSection& sec = f.units[u];
        slices = sec.numel == numel[u] && sec.range.begin == r.begin && sec.range.count == r.count;
    }
    if (f.rank != q || f.ranks != N || !slices)
        throw Error(fmt::format("checkpoint '{}': {} holds the slices of rank {} of {} ({} units), "
                                "not those of rank {} of {} ({} units): it was copied or renamed "
                                "from another rank's file; the checkpoint is inconsistent: {}",
                                cdir, name, f.rank, f.ranks, f.units.size(), q, N, numel.size(),
                                earlier_checkpoint_hint(cdir)));
    return f;
}

ZeroEngine::OwnedState load_checkpoint(const std::string& cdir, const nlohmann::json& config,
                                       const std::vector<std::uint64_t>& numel,
                                       const std::vector<ElementRange>& want) {
    const nlohmann::json meta = read_checkpoint_meta(cdir);
    check_compatible(cdir, meta, config, numel);
    const int N = meta["ranks"].get<int>();
    ZeroEngine::OwnedState s;
    if (meta.contains("exact_exponents")) {
        const nlohmann::json& e = meta["exact_exponents"];
        if (!e.is_array() || e.size() != numel.size())
            throw Error("checkpoint '" + cdir +
                        "': meta.json's exact_exponents is not one integer per unit; it is "
                        "corrupt");
        for (const auto& x : e) {
            if (!x.is_number_integer())
                throw Error("checkpoint '" + cdir +
                            "': meta.json's exact_exponents holds a non-integer; it is corrupt");
            s.exponents.push_back(x.get<int>());
        }
    }
    for (const ElementRange& w : want) {
        s.offset.push_back(w.begin);
        for (auto* part : {&s.master, &s.m, &s.v}) part->emplace_back(w.count, 0.0f);
    }
    bool first = true;
    for (int q = 0; q < N; ++q) {
        bool needed = false; // does file q hold any element this rank wants?
        for (std::size_t u = 0; u < numel.size(); ++u) {
            const ElementRange r = stored_range(numel[u], N, q);
            needed = needed || (r.count && r.begin < want[u].begin + want[u].count &&
                                want[u].begin < r.begin + r.count);
        }
        if (!needed) continue;
        const CheckpointFile f = read_rank_file(cdir, q, N, numel);
        if (first) {
            s.step = f.step, s.iteration = f.iteration, s.loss_scale = f.loss_scale;
            s.good_steps = f.good_steps, s.skipped = f.skipped;
            first = false;
        } else if (f.iteration != s.iteration || f.step != s.step)
            throw Error(fmt::format("checkpoint '{}': rank-{}.bin is at step {}, another file at "
                                    "step {}; the checkpoint is inconsistent: {}",
                                    cdir, q, f.iteration, s.iteration,
                                    earlier_checkpoint_hint(cdir)));
        if (f.iteration != meta.value("iteration", -1))
            throw Error(fmt::format("checkpoint '{}': rank-{}.bin is at step {}, meta.json says "
                                    "{}; the checkpoint is inconsistent: {}",
                                    cdir, q, f.iteration, meta.value("iteration", -1),
                                    earlier_checkpoint_hint(cdir)));
        for (std::size_t u = 0; u < numel.size(); ++u) { // copy the overlap
            const CheckpointSection& sec = f.units[u];
            const std::uint64_t lo = std::max(sec.range.begin, want[u].begin),
                                hi = std::min(sec.range.begin + sec.range.count,
                                              want[u].begin + want[u].count);
            for (std::uint64_t i = lo; i < hi; ++i) {
                s.master[u][i - want[u].begin] = sec.master[i - sec.range.begin];
                s.m[u][i - want[u].begin] = sec.m[i - sec.range.begin];
                s.v[u][i - want[u].begin] = sec.v[i - sec.range.begin];
            }
        }
    }
    if (first) { // this rank owns only padding: the header still comes from a file
        const CheckpointFile f = read_checkpoint_file((fs::path(cdir) / "rank-0.bin").string());
        s.step = f.step, s.iteration = f.iteration, s.loss_scale = f.loss_scale;
        s.good_steps = f.good_steps, s.skipped = f.skipped;
    }
    return s;
}

} // namespace shardlab
