// Llama's units and the offsets of a decoder layer's tensors inside its unit.
#include "model/llama/llama_layout.h"

#include "model/param_layout.h"

#include <string>

namespace shardlab {

LlamaBlockOffsets llama_block_offsets(const ModelConfig& c) {
    const std::size_t d = std::size_t(c.hidden), hd = std::size_t(c.head_dim()),
                      q = std::size_t(c.heads) * hd, kv = std::size_t(c.kv_heads) * hd,
                      f = std::size_t(c.ffn());
    LlamaBlockOffsets o{};
    o.in_norm = 0;
    o.qkv = d;
    o.o = o.qkv + (q + 2 * kv) * d;
    o.post_norm = o.o + d * q;
    o.gate = o.post_norm + d;
    o.up = o.gate + f * d;
    o.down = o.up + f * d;
    return o;
}

std::vector<ParamUnit> llama_units(const ModelConfig& c) {
    const std::int64_t V = c.vocab, d = c.hidden, hd = c.head_dim(), f = c.ffn();
    const std::int64_t q = std::int64_t(c.heads) * hd, kv = std::int64_t(c.kv_heads) * hd;
    const std::size_t vocab_rows = std::size_t(c.padded_vocab()) * std::size_t(d);
    std::vector<ParamUnit> units;
    units.push_back({"embeddings", {}, 0});
    add_param(units.back(), "model.embed_tokens.weight", {V, d}, vocab_rows);
    for (int i = 0; i < c.layers; ++i) {
        units.push_back({"layers." + std::to_string(i), {}, 0});
        ParamUnit& u = units.back();
        const std::string p = "model.layers." + std::to_string(i) + ".";
        add_param(u, p + "input_layernorm.weight", {d});
        add_param(u, p + "self_attn.q_proj.weight", {q, d});
        add_param(u, p + "self_attn.k_proj.weight", {kv, d});
        add_param(u, p + "self_attn.v_proj.weight", {kv, d});
        add_param(u, p + "self_attn.o_proj.weight", {d, q});
        add_param(u, p + "post_attention_layernorm.weight", {d});
        add_param(u, p + "mlp.gate_proj.weight", {f, d});
        add_param(u, p + "mlp.up_proj.weight", {f, d});
        add_param(u, p + "mlp.down_proj.weight", {d, f});
    }
    units.push_back({"norm", {}, 0});
    add_param(units.back(), "model.norm.weight", {d});
    if (!c.tied_head) add_param(units.back(), "lm_head.weight", {V, d}, vocab_rows);
    return units;
}

} // namespace shardlab
