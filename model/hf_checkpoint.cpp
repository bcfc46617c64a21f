#include "model/hf_checkpoint.h"

#include "core/error.h"
#include "core/json_depth.h"

#include <fmt/format.h>

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

int hf_int(const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.contains(key) || !j[key].is_number_integer())
        throw UsageError(fmt::format("{}: \"{}\" is missing or not an integer", where, key));
    return j[key].get<int>();
}

void refuse_unless(bool ok, const std::string& where, const std::string& what) {
    if (!ok) throw UsageError(fmt::format("{}: {}", where, what));
}

double hf_number(const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.contains(key) || !j[key].is_number())
        throw UsageError(fmt::format("{}: \"{}\" is missing or not a number", where, key));
    return j[key].get<double>();
}

// Llama 3.1 / 3.2's {"rope_type": "llama3", factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings}; any other kind (linear, dynamic, yarn, ...) is refused.
void read_rope_scaling(const nlohmann::json& j, ModelConfig& c, const std::string& where) {
    const nlohmann::json& r = j["rope_scaling"];
    refuse_unless(r.is_object(), where, "\"rope_scaling\" is not an object");
    const std::string type =
        r.contains("rope_type") ? r.value("rope_type", "") : r.value("type", "");
    refuse_unless(type == "llama3", where,
                  fmt::format("rope_scaling of type '{}': shardlab computes Llama 3's (\"llama3\") "
                              "only",
                              type));
    const std::string at = where + " rope_scaling";
    c.rope_factor = hf_number(r, "factor", at);
    c.rope_low_freq = hf_number(r, "low_freq_factor", at);
    c.rope_high_freq = hf_number(r, "high_freq_factor", at);
    c.rope_original_context = hf_int(r, "original_max_position_embeddings", at);
}
} // namespace

CheckpointFiles resolve_checkpoint(const std::string& path) {
    const fs::path p(path);
    if (fs::is_directory(p)) {
        if (fs::exists(p / "model.safetensors.index.json"))
            return from_index(p / "model.safetensors.index.json");
        if (fs::exists(p / "model.safetensors"))
            return {{(p / "model.safetensors").string()}, {}, config_beside(p)};
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
    ModelConfig c;
    if (type == "gpt2") {
        c.vocab = hf_int(j, "vocab_size", where);
        c.context = hf_int(j, "n_positions", where);
        c.layers = hf_int(j, "n_layer", where);
        c.hidden = hf_int(j, "n_embd", where);
        c.heads = c.kv_heads = hf_int(j, "n_head", where);
        c.validate();
        return c;
    }
    refuse_unless(type == "llama", where,
                  fmt::format("model_type '{}' is not one shardlab computes (llama, gpt2)", type));
    c.arch = Architecture::llama;
    c.vocab = hf_int(j, "vocab_size", where);
    c.context = hf_int(j, "max_position_embeddings", where);
    c.layers = hf_int(j, "num_hidden_layers", where);
    c.hidden = hf_int(j, "hidden_size", where);
    c.heads = hf_int(j, "num_attention_heads", where);
    c.kv_heads = j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null()
                     ? hf_int(j, "num_key_value_heads", where)
                     : c.heads;
    c.ffn_width = hf_int(j, "intermediate_size", where);
    c.tied_head = j.value("tie_word_embeddings", false);
    c.rope_theta = j.value("rope_theta", 10000.0);
    c.norm_eps = j.value("rms_norm_eps", 1e-6);
    if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) read_rope_scaling(j, c, where);
    refuse_unless(!j.value("attention_bias", false) && !j.value("mlp_bias", false), where,
                  "attention_bias / mlp_bias are set; shardlab's Llama has no biases");
    refuse_unless(j.value("hidden_act", "silu") == "silu", where,
                  "hidden_act is not \"silu\"; shardlab's Llama MLP is SwiGLU");
    refuse_unless(!j.contains("head_dim") || j["head_dim"].is_null() ||
                      (c.heads > 0 && j["head_dim"] == c.hidden / c.heads),
                  where, "head_dim differs from hidden_size / num_attention_heads");
    c.validate();
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
    if (c.arch != Architecture::llama)
        return {{"model_type", "gpt2"},
                {"architectures", nlohmann::json::array({"GPT2LMHeadModel"})},
                {"vocab_size", c.vocab},
                {"n_positions", c.context},
                {"n_layer", c.layers},
                {"n_embd", c.hidden},
                {"n_head", c.heads},
                {"activation_function", "gelu_new"},
                {"layer_norm_epsilon", 1e-5},
                {"tie_word_embeddings", true}};
    return {{"model_type", "llama"},
            {"architectures", nlohmann::json::array({"LlamaForCausalLM"})},
            {"vocab_size", c.vocab},
            {"max_position_embeddings", c.context},
            {"num_hidden_layers", c.layers},
            {"hidden_size", c.hidden},
            {"num_attention_heads", c.heads},
            {"num_key_value_heads", c.kv_heads},
            {"head_dim", c.head_dim()},
            {"intermediate_size", c.ffn()},
            {"tie_word_embeddings", c.tied_head},
            {"rope_theta", c.rope_theta},
            {"rms_norm_eps", c.norm_eps},
            {"hidden_act", "silu"},
            {"attention_bias", false},
            {"mlp_bias", false},
            {"rope_scaling",
             c.rope_factor > 0
                 ? nlohmann::json{{"rope_type", "llama3"},
                                  {"factor", c.rope_factor},
                                  {"low_freq_factor", c.rope_low_freq},
                                  {"high_freq_factor", c.rope_high_freq},
                                  {"original_max_position_embeddings", c.rope_original_context}}
                 : nlohmann::json(nullptr)}};
}

nlohmann::json checkpoint_index(const std::map<std::string, std::string>& weight_map,
                                std::uint64_t total_bytes) {
    return {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
}

} // namespace shardlab
