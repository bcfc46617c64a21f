// Learning rate per step: linear warmup from 0, then cosine decay to min_ratio * peak at the
// last step (or constant after warmup).
#pragma once

#include <cmath>

namespace shardlab {

struct LrSchedule {
    float peak = 1e-3f;
    int warmup = 0;
    int total = 1;
    float min_ratio = 0.1f;
    bool cosine = true;

    float at(int step) const { // step is 0-based
        if (step < warmup) return peak * float(step + 1) / float(warmup);
        if (!cosine || total <= warmup + 1) return peak;
        const double progress = double(step - warmup) / double(total - warmup - 1);
        const double c = 0.5 * (1.0 + std::cos(M_PI * std::fmin(progress, 1.0)));
        return float(peak * (min_ratio + (1.0 - min_ratio) * c));
    }
};

} // namespace shardlab
