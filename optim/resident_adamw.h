// AdamW over a model whose units all live on this rank (one rank, no sharding): fp32 master
// weights (or, in fp32 mode, the parameters themselves), fp32 m and v, decay on 2-D weights
// only; after each step the parameters are rewritten from the master copy (round to nearest even).
#pragma once

#include "core/memory_tracker.h"
#include "model/unit_params.h"
#include "optim/adamw.h"

#include <vector>

namespace shardlab {

class ResidentAdamW {
  public:
    ResidentAdamW(ResidentParams& params, const std::vector<std::vector<float>>& init,
                  MemoryTracker& tracker, AdamWConfig cfg);
    // One update from the accumulated gradients (times grad_scale); step is counted inside.
    void step(float lr, float grad_scale);
    const float* master(int unit) const;

  private:
    ResidentParams& params_;
    AdamWConfig cfg_;
    int step_ = 0;
    std::vector<Allocation> master_, m_, v_;
};

} // namespace shardlab
