// UnitParams: how the model reaches parameters and hands back gradients, one sharding unit at a
// time. The model calls acquire() before it enqueues work that reads a unit and release() after
// the last of it; grads() gives the unit's gradient buffer (accumulated into) and grads_done()
// says the unit's backward has been enqueued. Pointers are device memory, ready for work on the
// compute stream. A single rank keeps everything resident (ResidentParams); the ZeRO engine
// gathers on acquire and reduce-scatters on grads_done.
#pragma once

#include "core/device_context.h"
#include "core/dtype.h"
#include "model/ops.h"
#include "model/param_layout.h"

#include <vector>

namespace shardlab {

class UnitParams {
  public:
    virtual ~UnitParams() = default;
    virtual const void* acquire(int unit) = 0;
    virtual void release(int unit) = 0;
    virtual void* grads(int unit) = 0;
    virtual void grads_done(int unit) = 0;
};

// Every unit's parameters and gradients live on this rank, in `dtype`: for evaluation, sampling
// and the gradient reference (training, even on one rank, goes through the ZeRO engine).
class ResidentParams : public UnitParams {
  public:
    ResidentParams(const ParamLayout& layout, DType dtype, DeviceContext& context, Ops& ops);

    const void* acquire(int unit) override { return params_[unit].data(); }
    void release(int) override {}
    void* grads(int unit) override { return grads_[unit].data(); }
    void grads_done(int) override {}

    // Sets every unit's parameters from fp32 values (rounded to nearest even for 16-bit dtypes).
    void load(const std::vector<std::vector<float>>& units);
    void zero_grads();
    // A unit's gradient as fp32 on the host (waits for the compute stream).
    std::vector<float> grads_to_host(int unit);
    DType dtype() const { return dtype_; }
    const ParamLayout& layout() const { return layout_; }

  private:
    Tensor flat(const Allocation& a, int unit) const;
    const ParamLayout& layout_;
    DType dtype_;
    DeviceContext& context_;
    Ops& ops_;
    std::vector<Allocation> params_, grads_;
};

} // namespace shardlab
