// Written once for every family: model/activation_peak.h says what the loop walks.
#include "model/activation_peak.h"

#include <algorithm>

namespace shardlab {

std::uint64_t activation_peak(const ActivationBytes& b, int layers, CheckpointPolicy checkpoint) {
    std::uint64_t kept = 0, peak = 0;
    for (int l = 0; l < layers; ++l) {
        if (checkpoint.checkpointed(l))
            peak = std::max(peak, kept + b.layer);
        else
            kept += b.layer;
    }
    return b.inputs + std::max(peak, kept + b.head);
}

} // namespace shardlab
