// The unit list comes from the family (Family::units, model/family.h); offsets follow
// declaration order inside each unit (add_param).
#include "model/param_layout.h"

#include "model/family.h"

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

std::vector<std::uint64_t> ParamLayout::unit_numels() const {
    std::vector<std::uint64_t> numel;
    for (const ParamUnit& u : units_) numel.push_back(u.numel);
    return numel;
}

ParamLayout::ParamLayout(const ModelConfig& c)
    : units_(family(c.arch).units(c)), vocab_(c.vocab), padded_vocab_(c.padded_vocab()),
      tied_head_(c.tied_head) {
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
