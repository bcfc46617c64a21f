// Weights <-> safetensors (one file or a Hugging Face folder of shards), checked tensor by tensor
// against ParamLayout.
#include "model/weights_io.h"

#include "core/error.h"
#include "core/json_depth.h"
#include "model/family.h"
#include "model/safetensors.h"
#include "model/weights_writer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

namespace shardlab {

void save_weights(const std::string& path, const ModelWeights& w, DType store_as,
                  std::uint64_t shard_bytes) {
    save_weights(path, w.config, initial_values_from(w.units), store_as, shard_bytes);
}

void save_weights(const std::string& path, const ModelConfig& config, const InitialValues& values,
                  DType store_as, std::uint64_t shard_bytes) {
    WeightsWriter out(path, config, store_as, shard_bytes);
    const ParamLayout layout(config);
    std::vector<float> unit;
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        unit.resize(layout.units()[u].numel); // the largest unit's size, once
        values(int(u), 0, unit.size(), unit.data());
        for (std::size_t k = 0; k < layout.units()[u].params.size(); ++k) {
            const ParamInfo& p = layout.units()[u].params[k];
            out.write(int(u), k, 0, unit.data() + p.offset, p.numel);
        }
    }
    out.finish();
}

namespace {
// GPT-2's spelling of a tensor's name, for a file that carries no config.
std::string canonical(const std::string& name) {
    return family(Architecture::gpt2).canonical_name(name);
}
// A Hugging Face GPT-2 checkpoint carries no shardlab config: read V, d from wte, T from wpe and
// L from the block indices; heads are d / 64, the head size of every GPT-2 model.
ModelConfig infer_gpt2_config(const SafeTensorsFile& f, const std::string& path) {
    const SafeTensor* wte = nullptr;
    const SafeTensor* wpe = nullptr;
    int layers = 0;
    for (const SafeTensor& t : f.tensors) {
        const std::string name = canonical(t.name);
        if (name == "transformer.wte.weight") wte = &t;
        if (name == "transformer.wpe.weight") wpe = &t;
        if (name.rfind("transformer.h.", 0) == 0) {
            // "transformer.h.<layer>.…": a name without a layer number is left to the mismatch
            // check, which lists it as unexpected.
            int layer = -1;
            const char* first = name.c_str() + 14;
            const auto [end, ec] = std::from_chars(first, name.c_str() + name.size(), layer);
            if (ec == std::errc() && *end == '.' && layer >= 0 && layer < (1 << 20))
                layers = std::max(layers, layer + 1);
        }
    }
    if (!wte || !wpe || wte->shape.size() != 2 || wpe->shape.size() != 2)
        throw UsageError(
            "'" + path +
            "' has no shardlab model config in its metadata and no GPT-2 wte / "
            "wpe tensors to infer one from; write weights with `shardlab init` or --save-weights");
    const int d = int(wte->shape[1]);
    if (d % 64 != 0)
        throw UsageError(fmt::format(
            "'{}' has no model config and hidden size {} is not a multiple of 64, "
            "so the number of heads cannot be inferred; add a \"config\" metadata entry",
            path, d));
    ModelConfig c{int(wte->shape[0]), int(wpe->shape[0]), layers, d, d / 64, d / 64};
    c.validate();
    return c;
}

// shardlab's own config in the metadata first (it keeps what config.json has no field for), then a
// Hugging Face config.json beside the weights, then — GPT-2 only — the tensors' shapes.
ModelConfig config_of(const SafeTensorsFile& f, const std::string& path,
                      const std::optional<std::string>& config_json = std::nullopt) {
    auto it = f.metadata.find("config");
    if (it == f.metadata.end())
        return config_json ? config_from_hf_file(*config_json) : infer_gpt2_config(f, path);
    try {
        return config_from_json(
            parse_json_bounded(it->second, "'" + path + "': the metadata \"config\""));
    } catch (const nlohmann::json::exception& e) {
        throw UsageError("'" + path + "': the metadata \"config\" is not valid JSON: " + e.what());
    } catch (const UsageError& e) {
        throw UsageError("'" + path + "': " + e.what());
    }
}

// One shard of a sharded save (model-00002-of-00005.safetensors), given alone, lacks most of the
// model by design: said so, instead of calling its metadata wrong. Called when tensors are missing.
void refuse_lone_shard(const std::string& path) {
    if (is_shard_name(std::filesystem::path(path).filename().string()))
        throw UsageError(fmt::format("'{}' is one shard of a sharded checkpoint: give its folder, "
                                     "or the model.safetensors.index.json beside it",
                                     path));
}

// A config describing far more parameters than the file's tensors hold (over twice what 2-byte
// tensors could: most of the model absent) is corrupt metadata, refused in floating point before
// anything is allocated for it — a config claiming 2e9 layers stops here, not after 13 GB. A few
// missing tensors get the detailed mismatch message below instead.
void check_config_fits_file(const ModelConfig& c, const SafeTensorsFile& f,
                            const std::string& path) {
    const double params = c.num_params_f64();
    double bytes = 0;
    for (const SafeTensor& t : f.tensors) bytes += double(t.numel() * dtype_size(t.dtype));
    if (params <= bytes) return;
    refuse_lone_shard(path);
    throw UsageError(
        fmt::format("'{}': its config ({} layers, hidden {}, vocab {}, context {}) "
                    "describes {:.3g} parameters, but the file holds only {:.0f} bytes "
                    "of tensors; the config metadata is wrong — re-export the file",
                    path, c.layers, c.hidden, c.vocab, c.context, params, bytes));
}

// A weight that is NaN or infinite would poison every step: refused, naming the tensor.
// `first`: the tensor element v[0] is, for the message.
void check_finite(const float* v, std::size_t n, std::uint64_t first, const std::string& tensor,
                  const std::string& path) {
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(v[i]))
            throw UsageError(
                fmt::format("'{}': tensor '{}' holds {} at element {}; the weights are "
                            "corrupt or diverged — use an earlier checkpoint",
                            path, tensor, v[i], first + i));
}

// For every layout parameter, unit by unit, the index of the file tensor that holds it, after
// checking names and shapes; one error names every missing, unexpected or misshaped tensor.
std::vector<std::vector<std::size_t>> match_tensors(const SafeTensorsFile& f,
                                                    const ParamLayout& layout,
                                                    const ModelConfig& config,
                                                    const std::string& path) {
    std::vector<std::vector<std::size_t>> where;
    for (const auto& u : layout.units()) where.emplace_back(u.params.size(), SIZE_MAX);
    std::vector<std::string> extra, misshaped, twice;
    const Family& fam = family(config.arch);
    for (std::size_t i = 0; i < f.tensors.size(); ++i) {
        const SafeTensor& t = f.tensors[i];
        if (fam.ignored_tensor(t.name, config)) continue;
        int unit = 0;
        const ParamInfo* p = layout.find(fam.canonical_name(t.name), &unit);
        if (!p) {
            extra.push_back(t.name);
            continue;
        }
        if (t.shape != p->shape) {
            misshaped.push_back(fmt::format("{} is [{}], expected [{}]", t.name,
                                            fmt::join(t.shape, ", "), fmt::join(p->shape, ", ")));
            continue;
        }
        std::size_t& at = where[std::size_t(unit)]
                               [std::size_t(p - layout.units()[std::size_t(unit)].params.data())];
        // Two spellings of one parameter ("transformer.wte.weight", "wte.weight"): neither wins.
        if (at != SIZE_MAX)
            twice.push_back(
                fmt::format("{} and {} are both {}", f.tensors[at].name, t.name, p->name));
        at = i;
    }
    std::vector<std::string> missing;
    for (std::size_t u = 0; u < layout.num_units(); ++u)
        for (std::size_t k = 0; k < where[u].size(); ++k)
            if (where[u][k] == SIZE_MAX) missing.push_back(layout.units()[u].params[k].name);
    if (!missing.empty()) refuse_lone_shard(path);
    if (!missing.empty() || !extra.empty() || !misshaped.empty() || !twice.empty()) {
        std::string msg =
            fmt::format("'{}' does not match its model config ({})", path, config.describe());
        if (!missing.empty()) msg += fmt::format("; missing tensors: {}", fmt::join(missing, ", "));
        if (!extra.empty()) msg += fmt::format("; unexpected tensors: {}", fmt::join(extra, ", "));
        if (!misshaped.empty())
            msg += fmt::format("; wrong shapes: {}", fmt::join(misshaped, "; "));
        if (!twice.empty())
            msg += fmt::format("; one parameter held twice: {}", fmt::join(twice, "; "));
        throw UsageError(msg +
                         ". Re-export the weights for this config, or fix the config metadata");
    }
    return where;
}
} // namespace

ModelWeights load_weights(const std::string& path, int vocab_multiple) {
    WeightsReader reader(path, vocab_multiple);
    const ParamLayout layout(reader.config());
    ModelWeights w{reader.config(), {}};
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        w.units.emplace_back(layout.units()[u].numel);
        reader.read(int(u), 0, w.units.back().size(), w.units.back().data());
    }
    return w;
}

ModelWeights weights_from_file(const SafeTensorsFile& f, const std::string& path,
                               int vocab_multiple) {
    ModelWeights w;
    w.config = config_of(f, path);
    check_config_fits_file(w.config, f, path);
    w.config.vocab_multiple = vocab_multiple;
    w.config.validate();
    const ParamLayout layout(w.config);
    const auto where = match_tensors(f, layout, w.config, path);
    for (std::size_t u = 0; u < layout.num_units(); ++u) {
        w.units.emplace_back(layout.units()[u].numel); // zeros: wte's padding rows stay so
        for (std::size_t k = 0; k < where[u].size(); ++k) {
            const ParamInfo& p = layout.units()[u].params[k];
            const SafeTensor& t = f.tensors[where[u][k]];
            convert(t.data.data(), t.dtype, w.units[u].data() + p.offset, DType::f32, p.numel);
            check_finite(w.units[u].data() + p.offset, p.numel, 0, t.name, path);
        }
    }
    return w;
}

namespace {
// Every shard's header as one list of tensors (no data), with each tensor's shard; the index's
// weight_map must agree with what the shards hold, tensor by tensor: a disagreement means shards
// from different saves.
SafeTensorsFile read_headers(const CheckpointFiles& files, const std::string& path,
                             std::vector<std::size_t>& shard_of) {
    SafeTensorsFile merged;
    std::map<std::string, std::size_t> seen;
    const std::string fix = "; the index and its shards come from different saves — copy the "
                            "checkpoint again";
    for (std::size_t s = 0; s < files.shards.size(); ++s) {
        SafeTensorsFile f = read_safetensors_index(files.shards[s]);
        if (s == 0) merged.metadata = f.metadata; // every shard carries the same metadata
        for (SafeTensor& t : f.tensors) {
            const auto [at, fresh] = seen.emplace(t.name, s);
            if (!fresh)
                throw UsageError(fmt::format("'{}': tensor '{}' is in both '{}' and '{}'{}", path,
                                             t.name, files.shards[at->second], files.shards[s],
                                             fix));
            const auto listed = files.weight_map.find(t.name);
            if (!files.weight_map.empty() &&
                (listed == files.weight_map.end() || listed->second != files.shards[s]))
                throw UsageError(fmt::format(
                    "'{}': shard '{}' holds tensor '{}', which the index {}{}", path,
                    files.shards[s], t.name,
                    listed == files.weight_map.end() ? "does not list"
                                                     : "places in '" + listed->second + "'",
                    fix));
            shard_of.push_back(s);
            merged.tensors.push_back(std::move(t));
        }
    }
    for (const auto& [name, shard] : files.weight_map)
        if (!seen.count(name))
            throw UsageError(fmt::format("'{}': the index places tensor '{}' in '{}', which does "
                                         "not hold it{}",
                                         path, name, shard, fix));
    return merged;
}

// The checkpoint's config, checked against its tensors before anything is sized by it (the
// members after config_ — the layout first — are built from it).
ModelConfig fitting_config(const SafeTensorsFile& f, const std::string& path,
                           const std::optional<std::string>& config_json, int vocab_multiple) {
    ModelConfig c = config_of(f, path, config_json);
    check_config_fits_file(c, f, path);
    c.vocab_multiple = vocab_multiple;
    c.validate();
    return c;
}
} // namespace

WeightsReader::WeightsReader(const std::string& path, int vocab_multiple)
    : path_(path), files_(resolve_checkpoint(path)), index_(read_headers(files_, path, shard_of_)),
      config_(fitting_config(index_, path, files_.config_json, vocab_multiple)), layout_(config_) {
    where_ = match_tensors(index_, layout_, config_, path);
    for (const std::string& shard : files_.shards) in_.emplace_back(shard, std::ios::binary);
}

void WeightsReader::read(int unit, std::uint64_t begin, std::uint64_t count, float* out) {
    const ParamUnit& u = layout_.units()[std::size_t(unit)];
    std::vector<unsigned char> bytes;
    for (std::size_t k = 0; k < u.params.size(); ++k) {
        const ParamInfo& p = u.params[k];
        // The padding after the tensor (wte's rows past V): zeros, not in the file.
        const std::uint64_t pad_first = std::max<std::uint64_t>(begin, p.offset + p.numel);
        const std::uint64_t pad_last = std::min<std::uint64_t>(begin + count, p.offset + p.stored);
        if (pad_first < pad_last)
            std::fill(out + (pad_first - begin), out + (pad_last - begin), 0.0f);
        const std::uint64_t first = std::max<std::uint64_t>(begin, p.offset);
        const std::uint64_t last = std::min<std::uint64_t>(begin + count, p.offset + p.numel);
        if (first >= last) continue;
        const std::size_t i = where_[std::size_t(unit)][k];
        const SafeTensor& t = index_.tensors[i];
        const std::string& file = files_.shards[shard_of_[i]];
        std::ifstream& in = in_[shard_of_[i]];
        const std::size_t ds = dtype_size(t.dtype);
        bytes.resize((last - first) * ds);
        in.seekg(std::streamoff(t.file_offset + (first - p.offset) * ds));
        in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()));
        if (!in)
            throw UsageError("'" + file + "': could not read tensor '" + t.name +
                             "'; check that the file is not being modified");
        convert(bytes.data(), t.dtype, out + (first - begin), DType::f32, last - first);
        check_finite(out + (first - begin), last - first, first - p.offset, t.name, file);
    }
}

} // namespace shardlab
