#include "model/llama/llama_memory.h"

#include <algorithm>

namespace shardlab {

namespace {
std::uint64_t qkv_width(const ModelConfig& c) {
    return std::uint64_t(c.heads + 2 * c.kv_heads) * std::uint64_t(c.head_dim());
}
} // namespace

std::uint64_t llama_activation_bytes(const ModelConfig& c, int batch, int seq, std::uint64_t S,
                                     CheckpointPolicy checkpoint) {
    const std::uint64_t BT = std::uint64_t(batch) * std::uint64_t(seq), d = std::uint64_t(c.hidden),
                        f = std::uint64_t(c.ffn());
    const std::uint64_t BHT = std::uint64_t(batch) * std::uint64_t(c.heads) * std::uint64_t(seq);
    const std::uint64_t layer = S * BT * (4 * d + qkv_width(c) + 3 * f) + 2 * BT * 4 + BHT * 4;
    const std::uint64_t inputs = std::uint64_t(c.layers + 1) * BT * d * S;
    const std::uint64_t head = BT * d * S + BT * 4 + BT * std::uint64_t(c.padded_vocab()) * S;
    // Kept layers accumulate; a checkpointed one exists only while it runs (in forward, and again
    // while it is recomputed in backward, with no more kept layers live than in forward).
    std::uint64_t kept = 0, peak = 0;
    for (int l = 0; l < c.layers; ++l) {
        if (checkpoint.checkpointed(l))
            peak = std::max(peak, kept + layer);
        else
            kept += layer;
    }
    return inputs + std::max(peak, kept + head);
}

std::uint64_t llama_gradient_scratch_bytes(const ModelConfig& c, int batch, int seq,
                                           std::uint64_t S) {
    const std::uint64_t BT = std::uint64_t(batch) * std::uint64_t(seq);
    return S * BT * (2 * std::uint64_t(c.hidden) + qkv_width(c) + 3 * std::uint64_t(c.ffn()));
}

} // namespace shardlab
