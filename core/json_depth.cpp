// Implementation of core/json_depth.h.
#include "core/json_depth.h"

#include "core/error.h"

namespace shardlab {

nlohmann::json parse_json_bounded(std::string_view text, const std::string& what) {
    const nlohmann::json::parser_callback_t limit = [&](int depth, nlohmann::json::parse_event_t,
                                                        nlohmann::json&) {
        if (depth > kMaxJsonDepth)
            throw UsageError(what + " nests deeper than " + std::to_string(kMaxJsonDepth) +
                             " levels; no file shardlab reads does, so it is corrupt or not the "
                             "file meant");
        return true;
    };
    return nlohmann::json::parse(text, limit);
}

} // namespace shardlab
