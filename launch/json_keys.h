// JsonKeys: typed reads of a JSON document's values by dotted key ("zero_optimization.stage"),
// remembering which keys were read so that the rest can be reported as ignored. "auto" (the
// Hugging Face integration's placeholder in DeepSpeed configs) reads as not given.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace shardlab {

class JsonKeys {
  public:
    // `origin` names the document in messages: "deepspeed config 'ds.json'".
    JsonKeys(const nlohmann::json& doc, std::string origin)
        : doc_(doc), origin_(std::move(origin)) {}

    // Throws UsageError "<origin>: <key> <what>".
    [[noreturn]] void fail(const std::string& key, const std::string& what) const;
    bool absent(const std::string& key) const { return find(key) == nullptr; }
    bool is_auto(const std::string& key) const;

    // The value at key, marked read; nullptr when absent or "auto". A parent that is not an object
    // fails.
    const nlohmann::json* get(const std::string& key);
    // The same, typed; another type fails with the key and the value named.
    std::optional<bool> boolean(const std::string& key);
    std::optional<double> number(const std::string& key);
    // A whole number in [at_least, INT_MAX] (what an int flag holds).
    std::optional<long long> whole(const std::string& key, long long at_least);
    std::optional<std::string> text(const std::string& key);

    const std::vector<std::string>& automatic() const { return automatic_; } // "auto" keys read
    // Leaves (values that are not objects, and empty objects) that no get() read, in key order.
    std::vector<std::string> unread() const;

  private:
    const nlohmann::json* find(const std::string& key) const;
    void collect_unread(const nlohmann::json& v, const std::string& key,
                        std::vector<std::string>& out) const;

    const nlohmann::json& doc_;
    std::string origin_;
    std::set<std::string> read_;
    std::vector<std::string> automatic_;
};

} // namespace shardlab
