// Per unit, per tensor: AdamW on the master copy, then params <- master.
#include "optim/resident_adamw.h"

#include <cstring>

namespace shardlab {

ResidentAdamW::ResidentAdamW(ResidentParams& params, const std::vector<std::vector<float>>& init,
                             MemoryTracker& tracker, AdamWConfig cfg)
    : params_(params), cfg_(cfg) {
    const bool fp32 = params.dtype() == DType::f32;
    for (std::size_t u = 0; u < params.layout().num_units(); ++u) {
        const std::size_t n = params.layout().units()[u].numel;
        if (!fp32) {
            master_.push_back(tracker.allocate(n * 4, Category::master));
            std::memcpy(master_.back().data(), init[u].data(), n * 4);
        }
        m_.push_back(tracker.allocate(n * 4, Category::optimizer));
        v_.push_back(tracker.allocate(n * 4, Category::optimizer));
        std::memset(m_.back().data(), 0, n * 4);
        std::memset(v_.back().data(), 0, n * 4);
    }
    params.load(init);
}

const float* ResidentAdamW::master(int unit) const {
    return master_.empty() ? static_cast<const float*>(params_.params(unit))
                           : master_[unit].as<float>();
}

void ResidentAdamW::step(float lr, float grad_scale) {
    ++step_;
    const DType t = params_.dtype();
    for (std::size_t u = 0; u < params_.layout().num_units(); ++u) {
        float* w = const_cast<float*>(master(int(u)));
        const auto* g = static_cast<const unsigned char*>(params_.grads(int(u)));
        for (const ParamInfo& p : params_.layout().units()[u].params)
            adamw_update(w + p.offset, m_[u].as<float>() + p.offset, v_[u].as<float>() + p.offset,
                         g + p.offset * dtype_size(t), t, p.numel, cfg_, lr, step_, p.decay,
                         grad_scale);
        if (t != DType::f32)
            convert(w, DType::f32, params_.params(int(u)), t, params_.layout().units()[u].numel);
    }
}

} // namespace shardlab
