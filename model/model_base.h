// ModelBase: what every family's model does the same below the Model interface — the micro-batch's
// shape checked against the config, activations requested from the tracker (Category::activations,
// on the compute stream), and views of activations and of a unit's flat buffer in the storage
// dtype. GPTModel and LlamaModel derive from it; their layers are their own.
#pragma once

#include "core/device_context.h"
#include "core/tensor.h"
#include "model/model.h"
#include "model/model_config.h"

#include <cstddef>

namespace shardlab {

class ModelBase : public Model {
  public:
    int batch() const override { return B_; }
    int seq() const override { return T_; }
    DType dtype() const override { return dt_; }

  protected:
    // Throws UsageError for a micro-batch the config cannot run (batch < 1, seq past the context).
    ModelBase(const ModelConfig& config, int batch, int seq, DType dtype, DeviceContext& context);

    Allocation activation(std::size_t n, DType t);
    Tensor tensor(const Allocation& a, Shape shape) const; // in the model's dtype
    Tensor row_stats(const Allocation& a) const;           // fp32 [B*T]: a norm's per-row value
    Tensor weight(const void* unit, std::size_t offset, Shape shape) const;

    int B_, T_;
    DType dt_;
    DeviceContext& ctx_;
};

} // namespace shardlab
