// LossScaler bookkeeping and the overflow scan (an exponent-bits test, no float compares).
#include "optim/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

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

bool has_non_finite(const void* values, DType t, std::size_t n) {
    bool bad = false;
    if (t == DType::f32) {
        auto* p = static_cast<const std::uint32_t*>(values);
#pragma omp parallel for reduction(|| : bad)
        for (std::size_t i = 0; i < n; ++i) bad = bad || (p[i] & 0x7f800000u) == 0x7f800000u;
    } else {
        const std::uint16_t mask = t == DType::bf16 ? 0x7f80u : 0x7c00u; // all-ones exponent
        auto* p = static_cast<const std::uint16_t*>(values);
#pragma omp parallel for reduction(|| : bad)
        for (std::size_t i = 0; i < n; ++i) bad = bad || (p[i] & mask) == mask;
    }
    return bad;
}

} // namespace shardlab
