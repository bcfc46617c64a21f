// Implementation of launch/json_keys.h.
#include "launch/json_keys.h"

#include "core/error.h"

#include <fmt/format.h>

#include <limits>

namespace shardlab {

using json = nlohmann::json;

void JsonKeys::fail(const std::string& key, const std::string& what) const {
    throw UsageError(origin_ + ": " + key + " " + what);
}

bool JsonKeys::is_auto(const std::string& key) const {
    const json* v = find(key);
    return v && v->is_string() && v->get<std::string>() == "auto";
}

const json* JsonKeys::get(const std::string& key) {
    read_.insert(key);
    const json* v = find(key);
    if (v && is_auto(key)) {
        automatic_.push_back(key);
        return nullptr;
    }
    return v;
}

std::optional<bool> JsonKeys::boolean(const std::string& key) {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(key, "must be true or false, not " + v->dump());
    return v->get<bool>();
}

std::optional<double> JsonKeys::number(const std::string& key) {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(key, "must be a number, not " + v->dump());
    return v->get<double>();
}

std::optional<long long> JsonKeys::whole(const std::string& key, long long at_least) {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) fail(key, "must be a whole number, not " + v->dump());
    const long long n = v->get<long long>();
    if (n < at_least) fail(key, fmt::format("is {}; it must be at least {}", n, at_least));
    if (n > std::numeric_limits<int>::max())
        fail(key, fmt::format("is {}; it must be at most {}", n, std::numeric_limits<int>::max()));
    return n;
}

std::optional<std::string> JsonKeys::text(const std::string& key) {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(key, "must be a string, not " + v->dump());
    return v->get<std::string>();
}

std::vector<std::string> JsonKeys::unread() const {
    std::vector<std::string> out;
    collect_unread(doc_, "", out);
    return out;
}

const json* JsonKeys::find(const std::string& key) const {
    const json* at = &doc_;
    std::size_t from = 0;
    while (true) { // one dotted part at a time
        const std::size_t dot = key.find('.', from);
        if (!at->is_object())
            fail(from == 0 ? "the document" : key.substr(0, from - 1), "must be an object ({...})");
        const auto it = at->find(key.substr(from, dot - from));
        if (it == at->end()) return nullptr;
        at = &*it;
        if (dot == std::string::npos) return at;
        from = dot + 1;
    }
}

void JsonKeys::collect_unread(const json& v, const std::string& key,
                              std::vector<std::string>& out) const {
    if (read_.count(key)) return;
    if (!v.is_object() || (v.empty() && !key.empty())) {
        out.push_back(key);
        return;
    }
    for (const auto& item : v.items())
        collect_unread(item.value(), key.empty() ? item.key() : key + "." + item.key(), out);
}

} // namespace shardlab
