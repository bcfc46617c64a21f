// The order in which a training step acquires parameter units, and — under ZeRO-3, where every
// acquire of a unit that is not live is an AllGather — which units are live when. The engine
// follows this schedule and the plan simulates it, so predicted gathers and gathered-unit memory
// are the engine's by construction.
//
// One micro-batch: forward embeddings, blocks 0..L-1, the final unit, and — when the output head
// is tied to the token embedding (GPT-2) — the embeddings again; backward blocks L-1..0 (the
// head's backward follows its forward at once, so those units are still live; embedding
// backward needs only gradients).
#pragma once

#include <cstdint>
#include <vector>

namespace shardlab {

struct GatherEvent {
    int unit;
    bool acquire; // false: release
};

// Units: 0 = embeddings, 1..layers = blocks, layers + 1 = ln_f.
std::vector<GatherEvent> step_schedule(int layers, bool tied_head = true);

struct GatherSimulation {
    std::vector<int> gathers;          // unit of each AllGather, in order
    std::uint64_t peak_live_bytes = 0; // most gathered bytes live at once
};

// Replays the schedule: an acquire gathers the unit unless live; with prefetch K, each acquire
// also gathers the next K distinct units the schedule will acquire; a released unit is freed
// unless it is within that prefetch window.
GatherSimulation simulate_gathers(const std::vector<GatherEvent>& schedule,
                                  const std::vector<std::uint64_t>& unit_bytes, int prefetch);

// The units the schedule acquires next after position `pos`, up to k distinct ones.
std::vector<int> upcoming_units(const std::vector<GatherEvent>& schedule, std::size_t pos, int k);

} // namespace shardlab
