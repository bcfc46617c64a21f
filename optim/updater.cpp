// Owned ranges cut where the weight decay changes, or padding lies between tensors.
#include "optim/updater.h"

#include <algorithm>

namespace shardlab {

std::vector<ShardSegment> shard_segments(const OwnedShard& shard) {
    std::vector<ShardSegment> out;
    const std::uint64_t lo_range = shard.offset, hi_range = shard.offset + shard.count();
    for (const ParamInfo& p : *shard.tensors) {
        const std::uint64_t lo = std::max<std::uint64_t>(p.offset, lo_range);
        const std::uint64_t hi = std::min<std::uint64_t>(p.offset + p.numel, hi_range);
        if (lo >= hi) continue;
        ShardSegment* last = out.empty() ? nullptr : &out.back();
        if (last && last->decay == p.decay && last->begin + last->count == lo - lo_range)
            last->count += hi - lo; // the same update's coefficients: one call for both
        else
            out.push_back({lo - lo_range, hi - lo, p.decay});
    }
    return out;
}

} // namespace shardlab
