// Encoding and checking one rank's checkpoint file.
#include "optim/checkpoint_file.h"

#include "core/error.h"
#include "core/read_file.h"
#include "optim/unit_shards.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>

namespace shardlab {

namespace {
constexpr char kMagic[8] = {'S', 'H', 'L', 'B', 'C', 'K', 'P', '2'};
constexpr char kOldMagic[8] = {'S', 'H', 'L', 'B', 'C', 'K', 'P', '1'};

std::uint64_t fnv1a(const char* p, std::size_t n) {
    std::uint64_t h = 1469598103934665603ull;
    for (std::size_t i = 0; i < n; ++i)
        h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
    return h;
}

template <typename V>
void put(std::string& out, V v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(V));
}

// Reads fields in order; every read is bounds-checked against the bytes there are.
class Reader {
  public:
    Reader(const std::string& bytes, std::size_t end, const std::string& path)
        : b_(bytes), end_(end), path_(path) {}
    template <typename V>
    V get() {
        need(sizeof(V));
        V v;
        std::memcpy(&v, b_.data() + pos_, sizeof(V));
        pos_ += sizeof(V);
        return v;
    }
    std::vector<float> floats(std::uint64_t n) {
        need(n, 4);
        std::vector<float> v(n);
        if (n) std::memcpy(v.data(), b_.data() + pos_, n * 4); // (an empty vector's data() is null)
        pos_ += n * 4;
        return v;
    }
    std::size_t pos() const { return pos_; }

  private:
    void need(std::uint64_t n, std::uint64_t size = 1) const {
        if (n > (end_ - pos_) / size)
            throw Error("checkpoint file '" + path_ +
                        "' is truncated or damaged; it cannot be resumed (use an earlier "
                        "checkpoint or start over)");
    }
    const std::string& b_;
    std::size_t end_, pos_ = 0;
    std::string path_;
};
} // namespace

ElementRange stored_range(std::uint64_t numel, int ranks, int q) {
    const std::uint64_t shard = padded_numel(numel, ranks) / std::uint64_t(ranks);
    const std::uint64_t begin = std::min(numel, std::uint64_t(q) * shard);
    return {begin, std::min(numel, begin + shard) - begin};
}

namespace {
// The file's layout in bytes: magic, rank, ranks, units, step, iteration, loss scale, good steps,
// skipped; the checksum at the end; each unit's numel, begin, count and its master, m, v.
constexpr std::uint64_t kFixedBytes = 8 + 4 * 3 + 4 * 2 + 4 + 4 + 8 + 8;
std::uint64_t section_bytes(std::uint64_t count) {
    return 3 * 8 + 3 * 4 * count;
}
} // namespace

std::uint64_t checkpoint_file_bytes(const std::vector<std::uint64_t>& numel, int ranks, int q) {
    std::uint64_t size = kFixedBytes;
    for (std::uint64_t n : numel) size += section_bytes(stored_range(n, ranks, q).count);
    return size;
}

std::string encode_checkpoint_file(const CheckpointFile& f) {
    // Sized once: appending into a growing string held up to three times the file while it
    // reallocated, memory no report declared (docs/MEMORY.md).
    std::uint64_t size = kFixedBytes;
    for (const CheckpointSection& s : f.units) size += section_bytes(s.range.count);
    std::string bytes;
    bytes.reserve(size);
    bytes.append(kMagic, 8);
    put<std::uint32_t>(bytes, std::uint32_t(f.rank));
    put<std::uint32_t>(bytes, std::uint32_t(f.ranks));
    put<std::uint32_t>(bytes, std::uint32_t(f.units.size()));
    put<std::int32_t>(bytes, f.step);
    put<std::int32_t>(bytes, f.iteration);
    put<float>(bytes, f.loss_scale);
    put<std::int32_t>(bytes, f.good_steps);
    put<std::int64_t>(bytes, f.skipped);
    for (const CheckpointSection& s : f.units) {
        put<std::uint64_t>(bytes, s.numel);
        put<std::uint64_t>(bytes, s.range.begin);
        put<std::uint64_t>(bytes, s.range.count);
        for (const auto* part : {&s.master, &s.m, &s.v})
            if (s.range.count)
                bytes.append(reinterpret_cast<const char*>(part->data()), s.range.count * 4);
    }
    put<std::uint64_t>(bytes, fnv1a(bytes.data(), bytes.size()));
    return bytes;
}

CheckpointFile decode_checkpoint_file(const std::string& bytes, const std::string& path) {
    if (bytes.size() >= 8 && std::memcmp(bytes.data(), kOldMagic, 8) == 0)
        throw UsageError("'" + path +
                         "' is a checkpoint of an older shardlab (format 1, one file per rank "
                         "count); resume it with that version, or start over");
    if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, 8) != 0)
        throw Error("'" + path + "' is not a shardlab checkpoint file (bad magic)");
    std::uint64_t stored = 0;
    std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
    if (stored != fnv1a(bytes.data(), bytes.size() - 8))
        throw Error("checkpoint file '" + path + "' is corrupt (checksum mismatch)");
    Reader r(bytes, bytes.size() - 8, path);
    r.get<std::uint64_t>(); // the magic
    CheckpointFile f;
    f.rank = int(r.get<std::uint32_t>());
    f.ranks = int(r.get<std::uint32_t>());
    const auto units = r.get<std::uint32_t>();
    f.step = r.get<std::int32_t>();
    f.iteration = r.get<std::int32_t>();
    f.loss_scale = r.get<float>();
    f.good_steps = r.get<std::int32_t>();
    f.skipped = long(r.get<std::int64_t>());
    if (f.ranks < 1 || f.rank < 0 || f.rank >= f.ranks || f.step < 0 || f.iteration < f.step)
        throw Error(fmt::format("checkpoint file '{}' has an impossible header (rank {} of {}, "
                                "step {}, iteration {}); it is corrupt",
                                path, f.rank, f.ranks, f.step, f.iteration));
    for (std::uint32_t u = 0; u < units; ++u) {
        CheckpointSection s;
        s.numel = r.get<std::uint64_t>();
        s.range.begin = r.get<std::uint64_t>();
        s.range.count = r.get<std::uint64_t>();
        const ElementRange want = stored_range(s.numel, f.ranks, f.rank);
        if (s.range.begin != want.begin || s.range.count != want.count)
            throw Error(fmt::format("checkpoint file '{}': unit {} holds elements [{}, +{}), rank "
                                    "{} of {} stores [{}, +{}); the file is corrupt",
                                    path, u, s.range.begin, s.range.count, f.rank, f.ranks,
                                    want.begin, want.count));
        s.master = r.floats(s.range.count);
        s.m = r.floats(s.range.count);
        s.v = r.floats(s.range.count);
        f.units.push_back(std::move(s));
    }
    if (r.pos() + 8 != bytes.size())
        throw Error("checkpoint file '" + path + "' has trailing bytes; it is corrupt");
    return f;
}

CheckpointFile read_checkpoint_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("checkpoint file '" + path + "' is missing; the checkpoint is incomplete");
    const std::string bytes = read_rest(in);
    return decode_checkpoint_file(bytes, path);
}

} // namespace shardlab
