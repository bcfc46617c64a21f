// The schedule and its replay.
#include "optim/gather_schedule.h"

#include <algorithm>
#include <set>

namespace shardlab {

std::vector<GatherEvent> step_schedule(int layers, bool tied_head) {
    const int emb = 0, fin = layers + 1;
    std::vector<GatherEvent> s;
    auto use = [&](int unit, UnitUse u) { s.push_back({unit, u}); };
    use(emb, UnitUse::acquire);
    use(emb, UnitUse::release);
    for (int l = 1; l <= layers; ++l) use(l, UnitUse::acquire), use(l, UnitUse::release);
    use(fin, UnitUse::acquire);
    if (tied_head) use(emb, UnitUse::acquire);
    use(fin, UnitUse::release); // after the head's backward
    if (tied_head) use(emb, UnitUse::release);
    use(fin, UnitUse::reduce);
    for (int l = layers; l >= 1; --l)
        use(l, UnitUse::acquire), use(l, UnitUse::release), use(l, UnitUse::reduce);
    use(emb, UnitUse::reduce);
    return s;
}

std::vector<int> upcoming_units(const std::vector<GatherEvent>& schedule, std::size_t pos, int k) {
    std::vector<int> out;
    for (std::size_t i = pos + 1; i < schedule.size() && int(out.size()) < k; ++i)
        if (schedule[i].use == UnitUse::acquire &&
            std::find(out.begin(), out.end(), schedule[i].unit) == out.end())
            out.push_back(schedule[i].unit);
    return out;
}

GatherSimulation simulate_gathers(const std::vector<GatherEvent>& schedule,
                                  const std::vector<std::uint64_t>& unit_bytes, int prefetch,
                                  const std::vector<std::uint64_t>& reduce_scratch) {
    GatherSimulation sim;
    std::set<int> live, seen; // gathered now, gathered at all
    std::uint64_t bytes = 0;
    auto gather = [&](int u) {
        if (live.insert(u).second) {
            sim.gathers.push_back(u);
            sim.regathers.push_back(!seen.insert(u).second);
            bytes += unit_bytes[u];
            sim.peak_live_bytes = std::max(sim.peak_live_bytes, bytes);
        }
    };
    for (std::size_t i = 0; i < schedule.size(); ++i) {
        const GatherEvent& e = schedule[i];
        if (e.use == UnitUse::acquire) {
            gather(e.unit);
            for (int u : upcoming_units(schedule, i, prefetch)) gather(u);
        } else if (e.use == UnitUse::release) {
            const auto next = upcoming_units(schedule, i, prefetch);
            if (std::find(next.begin(), next.end(), e.unit) == next.end()) {
                live.erase(e.unit);
                bytes -= unit_bytes[e.unit];
            }
        } else if (!reduce_scratch.empty()) {
            sim.peak_buffer_bytes = std::max(sim.peak_buffer_bytes, bytes + reduce_scratch[e.unit]);
        }
    }
    sim.peak_buffer_bytes = std::max(sim.peak_buffer_bytes, sim.peak_live_bytes);
    return sim;
}

} // namespace shardlab
