// Hugging Face folders: their files found, config.json to a ModelConfig and back, the index built.
#include "model/hf_checkpoint.h"

#include "core/error.h"
#include "core/json_depth.h"
#include "model/family.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace shardlab {

namespace fs = std::filesystem;

namespace {
// Through the nesting limit every file shardlab reads goes through (core/json_depth.h).
nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw UsageError(fmt::format("cannot open '{}'", p.string()));
    std::ostringstream text;
    text << in.rdbuf();
    try {
        return parse_json_bounded(text.str(), "'" + p.string() + "'");
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(fmt::format("'{}' is not valid JSON ({})", p.string(), e.what()));
    }
}

std::optional<std::string> config_beside(const fs::path& dir) {
    const fs::path c = dir / "config.json";
    if (fs::exists(c)) return c.string();
    return std::nullopt;
}

CheckpointFiles from_index(const fs::path& index) {
    const nlohmann::json j = read_json(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
        throw UsageError(fmt::format("'{}' has no \"weight_map\" object: not a safetensors index",
                                     index.string()));
    CheckpointFiles f;
    const fs::path dir = index.parent_path();
    std::set<std::string> seen;
    for (const auto& [tensor, shard] : j["weight_map"].items()) {
        if (!shard.is_string())
            throw UsageError(
                fmt::format("'{}': the shard of '{}' is not a file name", index.string(), tensor));
        const fs::path p = dir / shard.get<std::string>();
        if (!fs::exists(p))
            throw UsageError(fmt::format("'{}' lists shard '{}', which is missing; copy every "
                                         "shard the index names into {}",
                                         index.string(), shard.get<std::string>(), dir.string()));
        f.weight_map[tensor] = p.string();
        if (seen.insert(p.string()).second) f.shards.push_back(p.string());
    }
    f.config_json = config_beside(dir);
    return f;
}

// Shards with no index beside them: a save cut short between its renames (the writer removes the
// earlier index first, model/weights_writer.cpp) or a copy that missed the index.
void refuse_shards_without_index(const fs::path& dir) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (is_shard_name(name))
            throw UsageError(fmt::format(
                "'{}' holds shards ({} and others) but no model.safetensors.index.json: a save "
                "into it was cut short, or the index was not copied; save or copy it again",
                dir.string(), name));
    }
}
} // namespace

bool is_shard_name(const std::string& name) {
    const std::string shape = "model-#####-of-#####.safetensors";
    if (name.size() != shape.size()) return false;
    for (std::size_t i = 0; i < shape.size(); ++i)
        if (shape[i] == '#' ? !std::isdigit(static_cast<unsigned char>(name[i]))
                            : name[i] != shape[i])
            return false;
    return true;
}

CheckpointFiles resolve_checkpoint(const std::string& path) {
    const fs::path p(path);
    if (fs::is_directory(p)) {
        if (fs::exists(p / "model.safetensors.index.json"))
            return from_index(p / "model.safetensors.index.json");
        if (fs::exists(p / "model.safetensors"))
            return {{(p / "model.safetensors").string()}, {}, config_beside(p)};
        refuse_shards_without_index(p);
        throw UsageError(fmt::format("'{}' holds neither model.safetensors nor "
                                     "model.safetensors.index.json",
                                     path));
    }
    if (!fs::exists(p)) throw UsageError(fmt::format("weights '{}' do not exist", path));
    if (p.extension() == ".json") return from_index(p);
    return {{path}, {}, config_beside(p.parent_path().empty() ? fs::path(".") : p.parent_path())};
}

ModelConfig config_from_hf(const nlohmann::json& j, const std::string& where) {
    const std::string type = j.value("model_type", "");
    const std::optional<Architecture> arch = find_hf_architecture(type);
    if (!arch) {
        std::string known;
        for (const Family* f : all_families())
            known += (known.empty() ? "" : ", ") + std::string(f->hf_model_type);
        throw UsageError(fmt::format("{}: model_type '{}' is not one shardlab computes ({})", where,
                                     type, known));
    }
    ModelConfig c;
    c.arch = *arch;
    family(*arch).from_hf(j, where, c);
    try {
        c.validate();
    } catch (const UsageError& e) { // its advice names train's flags; the fix is in this file
        throw UsageError(fmt::format("{}: describes an invalid model: {} (the flags named are "
                                     "train's: with a Hugging Face folder, fix its config.json)",
                                     where, e.what()));
    }
    return c;
}

ModelConfig config_from_hf_file(const std::string& path) {
    try {
        return config_from_hf(read_json(path), "'" + path + "'");
    } catch (const nlohmann::json::exception& e) { // a field of the wrong type
        throw UsageError(fmt::format("'{}': {}", path, e.what()));
    }
}

nlohmann::json config_to_hf(const ModelConfig& c) {
    return family(c.arch).to_hf(c);
}

nlohmann::json checkpoint_index(const std::map<std::string, std::string>& weight_map,
                                std::uint64_t total_bytes) {
    return {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
}

} // namespace shardlab
