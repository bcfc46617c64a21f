// SquaredNorm: a scalar head and tail around whole groups of eight, each group vectorized.
#include "model/kernels/cpu/squared_norm.h"

#include "core/target_clones.h"

namespace shardlab::cpu {

namespace {
template <typename T>
SHARDLAB_TARGET_CLONES void add_groups(double* __restrict lane, const T* __restrict x,
                                       std::size_t groups) {
    for (std::size_t g = 0; g < groups; ++g)
        for (int l = 0; l < 8; ++l) {
            const double v = to_acc(x[g * 8 + l]);
            lane[l] += v * v;
        }
}
} // namespace

template <typename T>
void SquaredNorm::add(const T* x, std::size_t n) {
    std::size_t i = 0;
    for (; i < n && (count_ + i) % kLanes != 0; ++i) { // up to the next group boundary
        const double v = to_acc(x[i]);
        lane_[(count_ + i) % kLanes] += v * v;
    }
    const std::size_t groups = (n - i) / kLanes;
    add_groups(lane_, x + i, groups);
    for (i += groups * kLanes; i < n; ++i) {
        const double v = to_acc(x[i]);
        lane_[(count_ + i) % kLanes] += v * v;
    }
    count_ += n;
}

double SquaredNorm::total() const {
    return ((lane_[0] + lane_[1]) + (lane_[2] + lane_[3])) +
           ((lane_[4] + lane_[5]) + (lane_[6] + lane_[7]));
}

template void SquaredNorm::add<float>(const float*, std::size_t);
template void SquaredNorm::add<bf16_t>(const bf16_t*, std::size_t);
template void SquaredNorm::add<f16_t>(const f16_t*, std::size_t);

} // namespace shardlab::cpu
