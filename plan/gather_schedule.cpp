// The schedule and its replay.
#include "plan/gather_schedule.h"

#include <algorithm>
#include <set>

namespace shardlab {

std::vector<GatherEvent> step_schedule(int layers, bool tied_head) {
    const int emb = 0, fin = layers + 1;
    std::vector<GatherEvent> s;
    s.push_back({emb, true});
    s.push_back({emb, false});
    for (int l = 1; l <= layers; ++l) s.push_back({l, true}), s.push_back({l, false});
    s.push_back({fin, true});
    if (tied_head) s.push_back({emb, true});
    s.push_back({fin, false}); // after the head's backward
    if (tied_head) s.push_back({emb, false});
    for (int l = layers; l >= 1; --l) s.push_back({l, true}), s.push_back({l, false});
    return s;
}

std::vector<int> upcoming_units(const std::vector<GatherEvent>& schedule, std::size_t pos, int k) {
    std::vector<int> out;
    for (std::size_t i = pos + 1; i < schedule.size() && int(out.size()) < k; ++i)
        if (schedule[i].acquire && std::find(out.begin(), out.end(), schedule[i].unit) == out.end())
            out.push_back(schedule[i].unit);
    return out;
}

GatherSimulation simulate_gathers(const std::vector<GatherEvent>& schedule,
                                  const std::vector<std::uint64_t>& unit_bytes, int prefetch) {
    GatherSimulation sim;
    std::set<int> live, held; // gathered; acquired and not yet released
    std::uint64_t bytes = 0;
    auto gather = [&](int u) {
        if (live.insert(u).second) {
            sim.gathers.push_back(u);
            bytes += unit_bytes[u];
            sim.peak_live_bytes = std::max(sim.peak_live_bytes, bytes);
        }
    };
    for (std::size_t i = 0; i < schedule.size(); ++i) {
        const GatherEvent& e = schedule[i];
        if (e.acquire) {
            gather(e.unit);
            held.insert(e.unit);
            for (int u : upcoming_units(schedule, i, prefetch)) gather(u);
            continue;
        }
        held.erase(e.unit);
        const auto next = upcoming_units(schedule, i, prefetch);
        if (std::find(next.begin(), next.end(), e.unit) == next.end()) {
            live.erase(e.unit);
            bytes -= unit_bytes[e.unit];
        }
    }
    return sim;
}

} // namespace shardlab
