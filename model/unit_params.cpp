// ResidentParams: one params and one grads allocation per unit.
#include "model/unit_params.h"

#include <cstring>

namespace shardlab {

ResidentParams::ResidentParams(const ParamLayout& layout, DType dtype, MemoryTracker& tracker)
    : layout_(layout), dtype_(dtype) {
    for (const auto& u : layout.units()) {
        params_.push_back(tracker.allocate(u.numel * dtype_size(dtype), Category::params));
        grads_.push_back(tracker.allocate(u.numel * dtype_size(dtype), Category::grads));
    }
    zero_grads();
}

void ResidentParams::load(const std::vector<std::vector<float>>& units) {
    for (std::size_t u = 0; u < layout_.num_units(); ++u)
        convert(units[u].data(), DType::f32, params(int(u)), dtype_, layout_.units()[u].numel);
}

void ResidentParams::zero_grads() {
    for (auto& g : grads_) std::memset(g.data(), 0, g.bytes()); // 0 bits are +0 in every dtype
}

} // namespace shardlab
