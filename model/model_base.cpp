// ModelBase: the micro-batch's shape checked, and activations and parameters as tensors.
#include "model/model_base.h"

#include "core/error.h"

#include <fmt/format.h>

namespace shardlab {

ModelBase::ModelBase(const ModelConfig& config, int batch, int seq, DType dtype,
                     DeviceContext& context)
    : B_(batch), T_(seq), dt_(dtype), ctx_(context) {
    if (batch <= 0) throw UsageError(fmt::format("micro-batch must be positive, got {}", batch));
    if (seq <= 0 || seq > config.context)
        throw UsageError(fmt::format("sequence length {} is outside 1..{} (the model's context); "
                                     "use --seq <= {} or a model with a longer context",
                                     seq, config.context, config.context));
}

Allocation ModelBase::activation(std::size_t n, DType t) {
    return ctx_.tracker().allocate(n * dtype_size(t), Category::activations, ctx_.compute());
}

Tensor ModelBase::tensor(const Allocation& a, Shape shape) const {
    return {a.data(), dt_, shape, a.device()};
}

Tensor ModelBase::row_stats(const Allocation& a) const {
    return {a.data(), DType::f32, {std::int64_t(B_) * T_}, a.device()};
}

Tensor ModelBase::weight(const void* unit, std::size_t offset, Shape shape) const {
    return Tensor{const_cast<void*>(unit), dt_, {}, ctx_.device()}.view(offset, shape);
}

} // namespace shardlab
