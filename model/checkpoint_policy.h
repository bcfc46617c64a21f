// Activation checkpointing: which transformer blocks keep only their input in forward and
// recompute the rest in backward. The model follows it; the plan counts what it keeps.
#pragma once

#include <string>

namespace shardlab {

// None (every = 0), all (1), or blocks 0, K, 2K, ... (K).
struct CheckpointPolicy {
    int every = 0;
    bool checkpointed(int layer) const { return every > 0 && layer % every == 0; }
};
CheckpointPolicy parse_checkpoint(const std::string& text); // "none" | "all" | "every:K"
std::string checkpoint_name(CheckpointPolicy c);            // parse_checkpoint's inverse

} // namespace shardlab
