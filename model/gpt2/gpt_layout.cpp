// One block's unit is built by one function that also records its offsets, so the offsets the
// model reads and the tensors files name cannot disagree.
#include "model/gpt2/gpt_layout.h"

#include "model/param_layout.h"

#include <string>

namespace shardlab {

namespace {
ParamUnit gpt2_block(const ModelConfig& c, int i, Gpt2BlockOffsets& o) {
    const std::int64_t d = c.hidden, f = c.ffn();
    ParamUnit u{"h." + std::to_string(i), {}, 0};
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    o.ln1_w = add_param(u, p + "ln_1.weight", {d});
    o.ln1_b = add_param(u, p + "ln_1.bias", {d});
    o.attn_w = add_param(u, p + "attn.c_attn.weight", {d, 3 * d});
    o.attn_b = add_param(u, p + "attn.c_attn.bias", {3 * d});
    o.proj_w = add_param(u, p + "attn.c_proj.weight", {d, d});
    o.proj_b = add_param(u, p + "attn.c_proj.bias", {d});
    o.ln2_w = add_param(u, p + "ln_2.weight", {d});
    o.ln2_b = add_param(u, p + "ln_2.bias", {d});
    o.fc_w = add_param(u, p + "mlp.c_fc.weight", {d, f});
    o.fc_b = add_param(u, p + "mlp.c_fc.bias", {f});
    o.mproj_w = add_param(u, p + "mlp.c_proj.weight", {f, d});
    o.mproj_b = add_param(u, p + "mlp.c_proj.bias", {d});
    return u;
}
} // namespace

Gpt2BlockOffsets gpt2_block_offsets(const ModelConfig& c) {
    Gpt2BlockOffsets o{};
    gpt2_block(c, 0, o);
    return o;
}

std::vector<ParamUnit> gpt2_units(const ModelConfig& c) {
    const std::int64_t V = c.vocab, T = c.context, d = c.hidden;
    std::vector<ParamUnit> units;
    units.push_back({"embeddings", {}, 0});
    add_param(units.back(), "transformer.wte.weight", {V, d},
              std::size_t(c.padded_vocab()) * std::size_t(d));
    add_param(units.back(), "transformer.wpe.weight", {T, d}); // at gpt2_wpe_offset(c)
    Gpt2BlockOffsets o{};
    for (int i = 0; i < c.layers; ++i) units.push_back(gpt2_block(c, i, o));
    units.push_back({"ln_f", {}, 0});
    add_param(units.back(), "transformer.ln_f.weight", {d});
    add_param(units.back(), "transformer.ln_f.bias", {d});
    return units;
}

} // namespace shardlab
