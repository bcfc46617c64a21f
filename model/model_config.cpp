// Parameter counts, presets, validation and JSON for ModelConfig.
#include "model/model_config.h"

#include "core/error.h"
#include "model/family.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <climits>
#include <cstdint>

namespace shardlab {

int ModelConfig::padded_vocab() const {
    const long long m = vocab_multiple > 0 ? vocab_multiple : 1;
    return int((vocab + m - 1) / m * m);
}

std::size_t ModelConfig::num_params() const {
    return family(arch).params(*this, vocab);
}

std::size_t ModelConfig::num_params_stored() const {
    return family(arch).params(*this, padded_vocab());
}

double ModelConfig::num_params_f64() const {
    return family(arch).params_f64(*this, vocab);
}

void ModelConfig::validate() const {
    auto positive = [](int v, const char* name) {
        if (v <= 0) throw UsageError(fmt::format("{} must be positive, got {}", name, v));
    };
    positive(vocab, "vocab");
    positive(context, "context (seq)");
    positive(layers, "layers");
    positive(hidden, "hidden");
    positive(heads, "heads");
    positive(kv_heads, "kv-heads");
    if (vocab_multiple < 1 || vocab_multiple > 65536)
        throw UsageError(fmt::format("--vocab-multiple {} is outside 1..65536; use 128 (the "
                                     "default) or 1 for no padding",
                                     vocab_multiple));
    if (hidden % heads != 0)
        throw UsageError(fmt::format("hidden {} is not divisible by heads {}; pick heads dividing "
                                     "hidden (e.g. --heads {})",
                                     hidden, heads, hidden % 64 == 0 ? hidden / 64 : 1));
    if (heads % kv_heads != 0)
        throw UsageError(fmt::format("kv-heads {} does not divide heads {}; use a divisor of {}",
                                     kv_heads, heads, heads));
    // Token ids are stored as uint16, but a larger vocabulary (Llama 3's 128,256) still trains on
    // data whose ids fit; only sampling could make an id past 65535 (refused in train's checks).
    if (vocab > kMaxVocab)
        throw UsageError(fmt::format("vocab {} exceeds {}; no model shardlab knows is that large",
                                     vocab, kMaxVocab));
    if (ffn_width < 0) throw UsageError(fmt::format("ffn must be positive, got {}", ffn_width));
    if (arch == Architecture::params_only)
        throw UsageError("a bare parameter count is no model; give an architecture's shape");
    family(arch).validate(*this);
    // The counts are uint64 a parameter: past plan --params' limit they could wrap, and no
    // machine holds such a model anyway.
    const double params = num_params_f64();
    if (!(params <= 1e15))
        throw UsageError(fmt::format("this shape has {:.3g} parameters, more than the 1e15 "
                                     "shardlab plans for; use a smaller --hidden, --layers or "
                                     "--vocab",
                                     params));
}

std::string ModelConfig::describe() const {
    const std::string shape = family(arch).describe(*this);
    if (padded_vocab() == vocab)
        return fmt::format("{} ({:.2f}M params)", shape, double(num_params()) / 1e6);
    return fmt::format("{} ({:.2f}M params; {:.2f}M stored, V padded to {})", shape,
                       double(num_params()) / 1e6, double(num_params_stored()) / 1e6,
                       padded_vocab());
}

nlohmann::json config_to_json(const ModelConfig& c) {
    nlohmann::json j = {{"arch", architecture_name(c.arch)},
                        {"vocab", c.vocab},
                        {"context", c.context},
                        {"layers", c.layers},
                        {"hidden", c.hidden},
                        {"heads", c.heads},
                        {"kv_heads", c.kv_heads}};
    family(c.arch).to_json(c, j);
    return j;
}

namespace {
std::string shown(const nlohmann::json& v) {
    // Only scalars are quoted: dump() of a deeply nested value recurses once per level.
    return v.is_primitive() ? v.dump() : "a JSON " + std::string(v.type_name());
}
const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.is_object() || !j.contains(key))
        throw UsageError(fmt::format("{}: \"{}\" is missing", where, key));
    return j.at(key);
}

Architecture config_arch(const nlohmann::json& j) {
    if (!j.contains("arch")) return Architecture::gpt2; // written before "arch" was
    const nlohmann::json& v = j.at("arch");
    if (v.is_string())
        if (const std::optional<Architecture> a = find_architecture(v.get<std::string>()))
            return *a;
    throw UsageError("model config \"arch\" is " + shown(v) + ", not " + family_names());
}
} // namespace

int config_int(const nlohmann::json& j, const char* key, const std::string& where) {
    const nlohmann::json& v = field(j, key, where);
    if (!v.is_number_integer())
        throw UsageError(fmt::format("{}: \"{}\" is {}, not a whole number", where, key, shown(v)));
    const bool fits = v.is_number_unsigned()
                          ? v.get<std::uint64_t>() <= std::uint64_t(INT_MAX)
                          : v.get<std::int64_t>() >= INT_MIN && v.get<std::int64_t>() <= INT_MAX;
    if (!fits)
        throw UsageError(fmt::format("{}: \"{}\" is {}, out of range", where, key, shown(v)));
    return v.get<int>();
}

double config_number(const nlohmann::json& j, const char* key, const std::string& where) {
    const nlohmann::json& v = field(j, key, where);
    if (!v.is_number())
        throw UsageError(fmt::format("{}: \"{}\" is {}, not a number", where, key, shown(v)));
    return v.get<double>();
}

bool config_bool(const nlohmann::json& j, const char* key, const std::string& where) {
    const nlohmann::json& v = field(j, key, where);
    if (!v.is_boolean())
        throw UsageError(fmt::format("{}: \"{}\" is {}, not true or false", where, key, shown(v)));
    return v.get<bool>();
}

ModelConfig config_from_json(const nlohmann::json& j) {
    const std::string where = "model config";
    ModelConfig c;
    c.arch = config_arch(j);
    c.vocab = config_int(j, "vocab", where);
    c.context = config_int(j, "context", where);
    c.layers = config_int(j, "layers", where);
    c.hidden = config_int(j, "hidden", where);
    c.heads = config_int(j, "heads", where);
    c.kv_heads = j.contains("kv_heads") ? config_int(j, "kv_heads", where) : c.heads;
    family(c.arch).from_json(j, c);
    c.validate();
    return c;
}

} // namespace shardlab
