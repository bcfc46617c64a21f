// Builds the unit list in GPT-2's order (a Llama's: model/llama/llama_layout.cpp); offsets
// follow declaration order inside each unit.
#include "model/param_layout.h"

#include "model/architecture.h"
#include "model/llama/llama_layout.h"

#include <algorithm>
#include <string>

namespace shardlab {

std::size_t add_param(ParamUnit& u, std::string name, std::vector<std::int64_t> shape,
                      std::size_t stored) {
    std::size_t n = 1;
    for (auto d : shape) n *= std::size_t(d);
    const bool decay = shape.size() == 2;
    u.params.push_back({std::move(name), std::move(shape), u.numel, n, decay, std::max(n, stored)});
    u.numel += u.params.back().stored;
    return u.params.back().offset;
}

ParamLayout::ParamLayout(const ModelConfig& c)
    : vocab_(c.vocab), padded_vocab_(c.padded_vocab()), tied_head_(c.tied_head) {
    require_family_built(c.arch);
    if (c.arch == Architecture::llama) {
        units_ = llama_units(c);
        for (const auto& u : units_) total_ += u.numel;
        return;
    }
    auto add = [](ParamUnit& u, std::string name, std::vector<std::int64_t> shape,
                  std::size_t stored = 0) { return add_param(u, std::move(name), shape, stored); };
    const std::int64_t V = c.vocab, T = c.context, d = c.hidden, f = c.ffn();
    ParamUnit emb{"embeddings", {}, 0};
    add(emb, "transformer.wte.weight", {V, d}, std::size_t(padded_vocab_) * std::size_t(d));
    wpe_offset_ = add(emb, "transformer.wpe.weight", {T, d});
    units_.push_back(std::move(emb));

    for (int i = 0; i < c.layers; ++i) {
        ParamUnit u{"h." + std::to_string(i), {}, 0};
        const std::string p = "transformer.h." + std::to_string(i) + ".";
        BlockOffsets o{};
        o.ln1_w = add(u, p + "ln_1.weight", {d});
        o.ln1_b = add(u, p + "ln_1.bias", {d});
        o.attn_w = add(u, p + "attn.c_attn.weight", {d, 3 * d});
        o.attn_b = add(u, p + "attn.c_attn.bias", {3 * d});
        o.proj_w = add(u, p + "attn.c_proj.weight", {d, d});
        o.proj_b = add(u, p + "attn.c_proj.bias", {d});
        o.ln2_w = add(u, p + "ln_2.weight", {d});
        o.ln2_b = add(u, p + "ln_2.bias", {d});
        o.fc_w = add(u, p + "mlp.c_fc.weight", {d, f});
        o.fc_b = add(u, p + "mlp.c_fc.bias", {f});
        o.mproj_w = add(u, p + "mlp.c_proj.weight", {f, d});
        o.mproj_b = add(u, p + "mlp.c_proj.bias", {d});
        block_ = o;
        units_.push_back(std::move(u));
    }

    ParamUnit fin{"ln_f", {}, 0};
    add(fin, "transformer.ln_f.weight", {d});
    add(fin, "transformer.ln_f.bias", {d});
    units_.push_back(std::move(fin));
    for (const auto& u : units_) total_ += u.numel;
}

const ParamInfo* ParamLayout::find(const std::string& name, int* unit) const {
    for (std::size_t i = 0; i < units_.size(); ++i)
        for (const auto& p : units_[i].params)
            if (p.name == name) {
                if (unit) *unit = int(i);
                return &p;
            }
    return nullptr;
}

} // namespace shardlab
