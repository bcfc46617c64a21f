// Parsing and printing --attention.
#include "model/attention_kind.h"

#include "core/error.h"

namespace shardlab {

AttentionKind parse_attention(const std::string& text) {
    if (text == "flash") return AttentionKind::flash;
    if (text == "materialize") return AttentionKind::materialize;
    throw UsageError("bad --attention '" + text + "'; use flash or materialize");
}

const char* attention_name(AttentionKind kind) {
    return kind == AttentionKind::flash ? "flash" : "materialize";
}

} // namespace shardlab
