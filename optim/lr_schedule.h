// Learning rate per step: linear warmup (step s < warmup gets peak·(s+1)/warmup), then a decay to
// min_ratio * peak at the last step — cosine or linear — or constant after warmup. The first step
// after warmup keeps the peak, so a run with a single step after warmup never decays (a decay needs
// two).
#pragma once

#include <cmath>

namespace shardlab {

struct LrSchedule {
    enum class Decay { cosine, linear, constant };
    float peak = 1e-3f;
    int warmup = 0;
    int total = 1;
    float min_ratio = 0.1f;
    Decay decay = Decay::cosine;

    float at(int step) const { // step is 0-based
        if (step < warmup) return peak * float(step + 1) / float(warmup);
        if (decay == Decay::constant || total <= warmup + 1) return peak;
        const double progress = std::fmin(double(step - warmup) / double(total - warmup - 1), 1.0);
        // The fraction of the way from the floor up to the peak: 1 after warmup, 0 at the end.
        const double left =
            decay == Decay::cosine ? 0.5 * (1.0 + std::cos(M_PI * progress)) : 1.0 - progress;
        return float(peak * (min_ratio + (1.0 - min_ratio) * left));
    }
};

} // namespace shardlab
