// plan/builtin_profiles.json, compiled in as text (CMake writes it into
// generated/plan/builtin_profiles_json.h), parsed once on first use.
#include "plan/builtin_profiles.h"

#include "plan/builtin_profiles_json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

namespace shardlab {

namespace {
const std::map<std::string, MachineProfile>& builtins() {
    static const std::map<std::string, MachineProfile> all = [] {
        std::map<std::string, MachineProfile> m;
        const nlohmann::json doc = nlohmann::json::parse(kBuiltinProfilesJson); // outlives the loop
        for (const auto& [name, j] : doc.items())
            m[name] = profile_from_json(j, "built-in " + name);
        return m;
    }();
    return all;
}
} // namespace

std::vector<std::string> builtin_profile_names() {
    std::vector<std::string> names;
    for (const auto& [name, p] : builtins()) names.push_back(name);
    return names;
}

std::string builtin_profile_list(const char* separator) {
    return fmt::format("{}", fmt::join(builtin_profile_names(), separator));
}

const MachineProfile* builtin_profile(const std::string& name) {
    const auto it = builtins().find(name);
    return it == builtins().end() ? nullptr : &it->second;
}

} // namespace shardlab
