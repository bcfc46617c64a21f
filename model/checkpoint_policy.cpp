// Parsing --checkpoint, and its name back.
#include "model/checkpoint_policy.h"

#include "core/error.h"

#include <exception>

namespace shardlab {

CheckpointPolicy parse_checkpoint(const std::string& text) {
    if (text == "none") return {0};
    if (text == "all") return {1};
    if (text.rfind("every:", 0) == 0) {
        int k = 0;
        try {
            k = std::stoi(text.substr(6));
        } catch (const std::exception&) {
        }
        if (k >= 1) return {k};
    }
    throw UsageError("bad --checkpoint '" + text + "'; use none, all or every:K with K >= 1");
}

std::string checkpoint_name(CheckpointPolicy c) {
    if (c.every == 0) return "none";
    if (c.every == 1) return "all";
    return "every:" + std::to_string(c.every);
}

} // namespace shardlab
