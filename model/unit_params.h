// UnitParams: how the model reaches parameters and hands back gradients, one sharding unit at a
// time. The model calls acquire() before it uses a unit and release() after; grads() gives the
// unit's gradient buffer (accumulated into) and grads_done() says the unit's backward finished.
// A single rank keeps everything resident (ResidentParams); the ZeRO engine gathers on acquire
// and reduce-scatters on grads_done.
#pragma once

#include "core/dtype.h"
#include "core/memory_tracker.h"
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

// Every unit's parameters and gradients live on this rank, in `dtype`.
class ResidentParams : public UnitParams {
  public:
    ResidentParams(const ParamLayout& layout, DType dtype, MemoryTracker& tracker);

    const void* acquire(int unit) override { return params_[unit].data(); }
    void release(int) override {}
    void* grads(int unit) override { return grads_[unit].data(); }
    void grads_done(int) override {}

    void* params(int unit) { return params_[unit].data(); }
    // Sets every unit's parameters from fp32 values (rounded to nearest even for 16-bit dtypes).
    void load(const std::vector<std::vector<float>>& units);
    void zero_grads();
    DType dtype() const { return dtype_; }
    const ParamLayout& layout() const { return layout_; }

  private:
    const ParamLayout& layout_;
    DType dtype_;
    std::vector<Allocation> params_, grads_;
};

} // namespace shardlab
