#include "model/llama/llama_memory.h"

#include "model/activation_peak.h"

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
    ActivationBytes b;
    b.layer = S * BT * (4 * d + qkv_width(c) + 3 * f) + 2 * BT * 4 + BHT * 4;
    b.inputs = std::uint64_t(c.layers + 1) * BT * d * S;
    b.head = BT * d * S + BT * 4 + BT * std::uint64_t(c.padded_vocab()) * S;
    return activation_peak(b, c.layers, checkpoint);
}

std::uint64_t llama_gradient_scratch_bytes(const ModelConfig& c, int batch, int seq,
                                           std::uint64_t S) {
    const std::uint64_t BT = std::uint64_t(batch) * std::uint64_t(seq);
    return S * BT * (2 * std::uint64_t(c.hidden) + qkv_width(c) + 3 * std::uint64_t(c.ffn()));
}

} // namespace shardlab
