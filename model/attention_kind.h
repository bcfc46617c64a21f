// Which attention the model runs: flash (FlashAttention-2's tiles and online softmax; a block keeps
// the per-row log-sum-exp, 4·B·H·T bytes) or materialize (the teaching/reference path; a block
// keeps the B·H·T·T probabilities). The model follows it; the plan counts what it keeps.
#pragma once

#include <string>

namespace shardlab {

enum class AttentionKind { flash, materialize };

AttentionKind parse_attention(const std::string& text); // "flash" | "materialize"
const char* attention_name(AttentionKind kind);

} // namespace shardlab
