// LossScaler's bookkeeping: skip and halve on overflow, grow after a run of good steps.
#include "optim/loss_scaler.h"

#include <algorithm>
#include <cmath>

namespace shardlab {

bool LossScaler::update(bool found_overflow) {
    if (found_overflow) {
        if (dynamic_) scale_ = std::max(scale_ / 2, 1.0f); // DeepSpeed's floor (min_loss_scale 1)
        good_steps_ = 0;
        ++skipped_;
        return false;
    }
    if (dynamic_ && ++good_steps_ == growth_interval_) {
        if (std::isfinite(scale_ * 2)) scale_ *= 2; // an Inf scale would overflow every step
        good_steps_ = 0;
    }
    return true;
}

} // namespace shardlab
