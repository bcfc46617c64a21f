// ResidentParams: one params and one grads allocation per unit.
#include "model/unit_params.h"

namespace shardlab {

ResidentParams::ResidentParams(const ParamLayout& layout, DType dtype, DeviceContext& context,
                               Ops& ops)
    : layout_(layout), dtype_(dtype), context_(context), ops_(ops) {
    Stream& s = context.compute();
    for (const auto& u : layout.units()) {
        const std::size_t bytes = u.numel * dtype_size(dtype);
        params_.push_back(context.tracker().allocate(bytes, Category::params, s));
        grads_.push_back(context.tracker().allocate(bytes, Category::grads, s));
    }
    zero_grads();
}

Tensor ResidentParams::flat(const Allocation& a, int unit) const {
    return {a.data(), dtype_, {std::int64_t(layout_.units()[unit].numel)}, a.device()};
}

void ResidentParams::load(const std::vector<std::vector<float>>& units) {
    for (std::size_t u = 0; u < layout_.num_units(); ++u)
        upload_f32(context_.compute(), flat(params_[u], int(u)), units[u].data());
}

void ResidentParams::zero_grads() {
    for (std::size_t u = 0; u < grads_.size(); ++u)
        ops_.fill(context_.compute(), flat(grads_[u], int(u)), 0.0f);
}

std::vector<float> ResidentParams::grads_to_host(int unit) {
    return to_host_f32(context_.compute(), flat(grads_[unit], unit));
}

} // namespace shardlab
