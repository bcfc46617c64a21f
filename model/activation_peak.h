// The activation peak of one micro-batch under activation checkpointing, for a model whose layers
// all keep the same bytes: what every family's exact activation count (Family::activation_bytes:
// model/gpt2/gpt_costs.cpp, model/llama/llama_costs.cpp) shares — only the byte counts differ by
// family.
#pragma once

#include "model/checkpoint_policy.h"

#include <cstdint>

namespace shardlab {

struct ActivationBytes {
    std::uint64_t inputs = 0; // the residual stream's L + 1 layer inputs, kept until backward
    std::uint64_t layer = 0;  // one layer's activations: held while it runs (forward, recompute),
                              // kept to its backward unless checkpointed
    std::uint64_t head = 0;   // the final norm's output and statistics, and the logits
};

// Kept layers accumulate through forward; a checkpointed one exists only while it runs, in forward
// and again while it is recomputed in backward, with no more kept layers live than in forward. So
// the peak is the inputs plus the larger of the head's moment (every kept layer + the head) and a
// checkpointed layer's run (the kept layers before it + itself).
std::uint64_t activation_peak(const ActivationBytes& b, int layers, CheckpointPolicy checkpoint);

} // namespace shardlab
