// JSON read from a file is parsed with a nesting limit: nlohmann's parser keeps its own stack, but
// whatever walks or prints the document afterwards (dump(), the key walks) recurses once per level,
// so a file of 100,000 '[' would overflow the stack there. Every document shardlab reads nests a
// few levels; deeper input is refused while it is parsed, before anything is built from it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace shardlab {

inline constexpr int kMaxJsonDepth = 64;

// Parses `text`; syntax errors stay nlohmann::json exceptions (callers word them), input nested
// deeper than kMaxJsonDepth is a UsageError naming `what` (e.g. "deepspeed config 'ds.json'").
nlohmann::json parse_json_bounded(std::string_view text, const std::string& what);

} // namespace shardlab
