// Tensors packed into shards in layout order, each shard a SafeTensorsWriter; the index and
// config.json after the shards, so a folder's index only ever names complete files.
#include "model/weights_writer.h"

#include "core/error.h"
#include "core/file_target.h"
#include "core/test_hook.h"
#include "model/hf_checkpoint.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fcntl.h>
#include <unistd.h>

namespace shardlab {

namespace fs = std::filesystem;

bool is_weights_folder(const std::string& path) {
    std::error_code ec;
    return (!path.empty() && path.back() == '/') || fs::is_directory(path, ec);
}

namespace {
// What was removed or renamed in `dir` reaches the disk before what follows (POSIX leaves a
// directory's entries unordered across a power cut without it). Best effort: failure is no error.
void sync_directory(const fs::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

// Written beside and renamed over, as the shards are: a crash leaves the old file or the new one.
void write_text_atomically(const fs::path& p, const std::string& text) {
    const FileTarget target = file_target(p.string());
    const fs::path tmp = target.temporary();
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        out.flush();
        if (!out) {
            const int err = errno;
            std::error_code ec;
            if (!target.in_place) fs::remove(tmp, ec);
            throw Error(fmt::format("cannot write '{}': {}", p.string(),
                                    write_failure(err, "check the folder is writable")));
        }
    }
    if (target.in_place) return;
    std::error_code ec;
    fs::rename(tmp, target.path, ec);
    if (ec)
        throw Error(fmt::format("cannot rename '{}' into place: {}", tmp.string(), ec.message()));
}

const char* hf_dtype(DType t) {
    return t == DType::bf16 ? "bfloat16" : "float32";
}

// save_pretrained's file names: one file, or shard i of n numbered from 1, five digits each.
std::string shard_name(std::size_t i, std::size_t n) {
    return n == 1 ? "model.safetensors"
                  : fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, n);
}

// A weights file of an earlier save in this folder (another shard count leaves other names).
bool is_weights_file(const std::string& name) {
    return name == "model.safetensors" || name == "model.safetensors.index.json" ||
           is_shard_name(name);
}
} // namespace

WeightsWriter::WeightsWriter(const std::string& path, const ModelConfig& config, DType store_as,
                             std::uint64_t shard_bytes)
    : path_(path), folder_(is_weights_folder(path)), config_(config), store_as_(store_as),
      layout_(config) {
    check(shard_bytes > 0, "internal: a shard size of 0 bytes");
    if (folder_) {
        std::error_code ec;
        fs::create_directories(path_, ec);
        if (ec)
            throw Error(fmt::format("cannot create the weights folder '{}': {}; choose a writable "
                                    "path",
                                    path_, ec.message()));
    }
    // Pack tensors into shards in layout order: entries per shard, and each tensor's place.
    std::vector<std::vector<TensorEntry>> entries(1);
    std::uint64_t in_shard = 0;
    for (const ParamUnit& u : layout_.units()) {
        place_.emplace_back();
        for (const ParamInfo& p : u.params) {
            const std::uint64_t bytes = p.numel * dtype_size(store_as_);
            if (folder_ && !entries.back().empty() && in_shard + bytes > shard_bytes) {
                entries.emplace_back();
                in_shard = 0;
            }
            place_.back().push_back({entries.size() - 1, entries.back().size()});
            entries.back().push_back({p.name, store_as_, p.shape});
            in_shard += bytes;
        }
    }
    const std::map<std::string, std::string> metadata{{"format", "pt"},
                                                      {"config", config_to_json(config_).dump()}};
    for (std::size_t s = 0; s < entries.size(); ++s) {
        shard_names_.push_back(folder_ ? shard_name(s, entries.size()) : path_);
        shard_tensors_.emplace_back();
        for (const TensorEntry& e : entries[s]) shard_tensors_.back().push_back(e.name);
        shards_.push_back(std::make_unique<SafeTensorsWriter>(shard_path(s), metadata, entries[s]));
    }
}

WeightsWriter::~WeightsWriter() = default;

std::string WeightsWriter::shard_path(std::size_t s) const {
    return folder_ ? (fs::path(path_) / shard_names_[s]).string() : path_;
}

std::vector<std::string> WeightsWriter::files() const {
    std::vector<std::string> out;
    for (std::size_t s = 0; s < shard_names_.size(); ++s) out.push_back(shard_path(s));
    if (folder_ && shard_names_.size() > 1)
        out.push_back((fs::path(path_) / "model.safetensors.index.json").string());
    if (folder_) out.push_back((fs::path(path_) / "config.json").string());
    return out;
}

void WeightsWriter::write(int unit, std::size_t param, std::uint64_t first, const float* values,
                          std::size_t n) {
    const ParamInfo& p = layout_.units()[std::size_t(unit)].params[param];
    check(first + n <= p.numel, "internal: a weights write past tensor " + p.name);
    const Place& at = place_[std::size_t(unit)][param];
    const std::size_t es = dtype_size(store_as_);
    const void* bytes = values;
    if (store_as_ != DType::f32) {
        converted_.resize(n * es);
        convert(values, DType::f32, converted_.data(), store_as_, n);
        bytes = converted_.data();
    }
    SafeTensorsWriter& w = *shards_[at.shard];
    w.write(w.offset(at.entry) + first * es, bytes, n * es);
}

void WeightsWriter::finish() {
    const fs::path dir(path_);
    // Shards of the same names as an earlier save's replace them one rename at a time, and the
    // shards alone cannot tell two saves apart: the earlier index goes first (durably), so a save
    // cut short between the renames leaves shards without an index, which no reader loads,
    // rather than new and old shards that an old index would name as one model.
    if (folder_ && shards_.size() > 1 && fs::exists(dir / "model.safetensors.index.json")) {
        std::error_code ec;
        fs::remove(dir / "model.safetensors.index.json", ec);
        sync_directory(dir);
    }
    for (std::size_t s = 0; s < shards_.size(); ++s) {
        shards_[s]->finish();
        if (s == 0) test_hook_stop("weights_rename", 0); // tests: a save cut short here
    }
    if (!folder_) return;
    if (shards_.size() > 1) {
        std::map<std::string, std::string> weight_map;
        std::uint64_t total = 0;
        for (std::size_t s = 0; s < shards_.size(); ++s) {
            for (const std::string& t : shard_tensors_[s]) weight_map[t] = shard_names_[s];
            total += shards_[s]->data_bytes();
        }
        write_text_atomically(dir / "model.safetensors.index.json",
                              checkpoint_index(weight_map, total).dump(2));
    }
    nlohmann::json hf = config_to_hf(config_);
    hf["torch_dtype"] = hf_dtype(store_as_);
    write_text_atomically(dir / "config.json", hf.dump(2));
    // An earlier save's shards and index that this save did not overwrite would contradict it.
    const std::vector<std::string> mine = files();
    const std::set<std::string> kept(mine.begin(), mine.end());
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (is_weights_file(entry.path().filename().string()) && !kept.count(entry.path().string()))
            fs::remove(entry.path(), ec);
}

} // namespace shardlab
