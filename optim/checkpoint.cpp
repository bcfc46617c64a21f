// Binary layout of rank-R.bin (little-endian): "SHLBCKP1", u32 rank, u32 ranks, u32 units,
// i32 step, i32 iteration, f32 loss_scale, i32 good_steps, i64 skipped; per unit: u64 count, then
// count floats each of master, m, v; finally u64 FNV-1a of every byte before it.
#include "optim/checkpoint.h"

#include "core/error.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

namespace shardlab {

namespace fs = std::filesystem;

namespace {
constexpr char kMagic[8] = {'S', 'H', 'L', 'B', 'C', 'K', 'P', '1'};

std::uint64_t fnv1a(const std::string& bytes) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
    return h;
}

template <typename V>
void put(std::string& out, V v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(V));
}

class Reader {
  public:
    Reader(const std::string& bytes, const std::string& path) : b_(bytes), path_(path) {}
    template <typename V>
    V get() {
        need(sizeof(V));
        V v;
        std::memcpy(&v, b_.data() + pos_, sizeof(V));
        pos_ += sizeof(V);
        return v;
    }
    std::vector<float> floats(std::uint64_t n) {
        need(n * 4);
        std::vector<float> v(n);
        std::memcpy(v.data(), b_.data() + pos_, n * 4);
        pos_ += n * 4;
        return v;
    }
    std::size_t pos() const { return pos_; }

  private:
    void need(std::size_t n) const {
        if (pos_ + n > b_.size())
            throw Error("checkpoint file '" + path_ +
                        "' is truncated; it cannot be resumed (use an earlier "
                        "checkpoint or start over)");
    }
    const std::string& b_;
    std::string path_;
    std::size_t pos_ = 0;
};

// The keys that must match for a bitwise continuation.
const char* kMustMatch[] = {
    "model", "precision", "zero",  "micro_batch",  "grad_accum", "seq",
    "lr",    "warmup",    "steps", "min_lr_ratio", "schedule",   "weight_decay",
    "beta1", "beta2",     "eps",   "grad_clip",    "seed",       "data_sha256"};

std::string checkpoint_dir(const std::string& dir) {
    if (fs::exists(fs::path(dir) / "meta.json")) return dir;
    const fs::path current = fs::path(dir) / "checkpoint", prev = fs::path(dir) / "checkpoint.prev";
    // A save that died between its two renames leaves only the previous checkpoint.
    if (!fs::exists(current / "meta.json") && fs::exists(prev / "meta.json")) return prev.string();
    return current.string();
}

// Writes bytes to path and makes them durable; throws Error naming the path on any failure.
void write_durably(const fs::path& path, const std::string& bytes) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    bool ok = f != nullptr;
    ok = ok && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    ok = (f != nullptr && std::fclose(f) == 0) && ok;
    if (!ok)
        throw Error("cannot write checkpoint file '" + path.string() +
                    "'; check that the run directory is writable and has free space");
}
} // namespace

void save_checkpoint(const std::string& dir, const nlohmann::json& config, int ranks, int rank,
                     const ZeroEngine::OwnedState& s, MPI_Comm comm) {
    const fs::path tmp = fs::path(dir) / "checkpoint.tmp", final_dir = fs::path(dir) / "checkpoint",
                   prev = fs::path(dir) / "checkpoint.prev";
    if (rank == 0) fs::remove_all(tmp); // a half-written one from a run that died mid-save
    MPI_Barrier(comm);
    std::string bytes(kMagic, 8);
    put<std::uint32_t>(bytes, std::uint32_t(rank));
    put<std::uint32_t>(bytes, std::uint32_t(ranks));
    put<std::uint32_t>(bytes, std::uint32_t(s.master.size()));
    put<std::int32_t>(bytes, s.step);
    put<std::int32_t>(bytes, s.iteration);
    put<float>(bytes, s.loss_scale);
    put<std::int32_t>(bytes, s.good_steps);
    put<std::int64_t>(bytes, s.skipped);
    for (std::size_t u = 0; u < s.master.size(); ++u) {
        put<std::uint64_t>(bytes, s.master[u].size());
        for (const auto* part : {&s.master[u], &s.m[u], &s.v[u]})
            bytes.append(reinterpret_cast<const char*>(part->data()), part->size() * 4);
    }
    put<std::uint64_t>(bytes, fnv1a(bytes));
    // Every rank must have written its shard before the new checkpoint replaces the old one.
    int ok = 1;
    std::string why;
    try {
        fs::create_directories(tmp);
        write_durably(tmp / fmt::format("rank-{}.bin", rank), bytes);
    } catch (const std::exception& e) {
        ok = 0;
        why = e.what();
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if (!ok)
        throw Error(why.empty() ? "another rank could not write its checkpoint shard; the previous "
                                  "checkpoint is kept"
                                : why);
    if (rank ==
        0) { // old -> prev, new -> checkpoint, then drop prev: always one complete checkpoint
        write_durably(
            tmp / "meta.json",
            nlohmann::json{{"config", config}, {"ranks", ranks}, {"iteration", s.iteration}}.dump(
                2) +
                "\n");
        fs::remove_all(prev);
        if (fs::exists(final_dir)) fs::rename(final_dir, prev);
        fs::rename(tmp, final_dir);
        fs::remove_all(prev);
    }
    MPI_Barrier(comm);
}

std::string agree_checkpoint_dir(const std::string& dir, MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    std::string chosen = rank == 0 ? checkpoint_dir(dir) : std::string();
    int len = int(chosen.size());
    MPI_Bcast(&len, 1, MPI_INT, 0, comm);
    chosen.resize(std::size_t(len));
    MPI_Bcast(chosen.data(), len, MPI_CHAR, 0, comm);
    return chosen;
}

ZeroEngine::OwnedState load_checkpoint(const std::string& cdir, const nlohmann::json& config,
                                       int ranks, int rank) {
    std::ifstream meta_in(fs::path(cdir) / "meta.json");
    if (!meta_in)
        throw UsageError("no checkpoint in '" + cdir +
                         "' (no meta.json); point --resume at a run's --out directory");
    nlohmann::json meta;
    try {
        meta = nlohmann::json::parse(meta_in);
    } catch (const nlohmann::json::exception& e) {
        throw Error("checkpoint '" + cdir + "/meta.json' is corrupt: " + e.what());
    }
    if (meta.value("ranks", -1) != ranks)
        throw UsageError(
            fmt::format("checkpoint '{}' was written by {} ranks; resume it with mpirun -np {} "
                        "(shards are cut per rank count)",
                        cdir, meta.value("ranks", -1), meta.value("ranks", -1)));
    for (const char* key : kMustMatch) {
        const auto saved = meta["config"].value(key, nlohmann::json());
        const auto now = config.value(key, nlohmann::json());
        if (saved != now && std::string(key) == "data_sha256")
            throw UsageError(fmt::format(
                "checkpoint '{}' was trained on other data than {} (token fingerprints {} and "
                "{}); resume with the data it was trained on",
                cdir, config.value("data", std::string("this run's")),
                saved.is_string() ? saved.get<std::string>().substr(0, 12) : "(none)",
                now.is_string() ? now.get<std::string>().substr(0, 12) : "(none)"));
        if (saved != now)
            throw UsageError(fmt::format(
                "checkpoint '{}' was written with {} = {}, this run has {}; resume with "
                "the same setting",
                cdir, key, saved.dump(), now.dump()));
    }
    const fs::path file = fs::path(cdir) / fmt::format("rank-{}.bin", rank);
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw Error("checkpoint file '" + file.string() +
                    "' is missing; the checkpoint is incomplete");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string where = file.string();
    if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, 8) != 0)
        throw Error("'" + where + "' is not a shardlab checkpoint file (bad magic)");
    std::uint64_t stored = 0;
    std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
    if (stored != fnv1a(bytes.substr(0, bytes.size() - 8)))
        throw Error("checkpoint file '" + where +
                    "' is corrupt (checksum mismatch); use an earlier checkpoint");
    Reader r(bytes, where);
    r.floats(2); // the magic
    const auto file_rank = r.get<std::uint32_t>(), file_ranks = r.get<std::uint32_t>();
    if (int(file_rank) != rank || int(file_ranks) != ranks)
        throw Error(fmt::format("'{}' belongs to rank {} of {}, not rank {} of {}", where,
                                file_rank, file_ranks, rank, ranks));
    const auto units = r.get<std::uint32_t>();
    ZeroEngine::OwnedState s;
    s.step = r.get<std::int32_t>();
    s.iteration = r.get<std::int32_t>();
    s.loss_scale = r.get<float>();
    s.good_steps = r.get<std::int32_t>();
    s.skipped = r.get<std::int64_t>();
    for (std::uint32_t u = 0; u < units; ++u) {
        const auto n = r.get<std::uint64_t>();
        s.master.push_back(r.floats(n));
        s.m.push_back(r.floats(n));
        s.v.push_back(r.floats(n));
    }
    if (r.pos() + 8 != bytes.size())
        throw Error("checkpoint file '" + where + "' has trailing bytes; it is corrupt");
    return s;
}

} // namespace shardlab
