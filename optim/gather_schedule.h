// The order in which a training step uses parameter units — acquire, release, and reduce (the
// unit's gradient is final and is reduce-scattered) — and, under ZeRO-3, where every acquire of a
// unit that is not live is an AllGather, which units are live when. The engine follows this
// schedule and the plan simulates it, so predicted gathers, gathered-unit memory and collective
// scratch are the engine's by construction.
//
// One micro-batch: forward embeddings, blocks 0..L-1, the final unit, and — when the output head
// is tied to the token embedding (GPT-2) — the embeddings again; backward: the head's backward
// follows its forward at once (those units are still live), then the final unit's gradient is
// reduced; then blocks L-1..0, each reduced after its backward; the embeddings' gradient last.
#pragma once

#include <cstdint>
#include <vector>

namespace shardlab {

enum class UnitUse { acquire, release, reduce };

struct GatherEvent {
    int unit;
    UnitUse use;
};

// Units: 0 = embeddings, 1..layers = blocks, layers + 1 = the final norm (and an untied head).
std::vector<GatherEvent> step_schedule(int layers, bool tied_head);

struct GatherSimulation {
    std::vector<int> gathers;          // unit of each AllGather, in order
    std::vector<bool> regathers;       // each: the unit was gathered before in the micro-batch
    std::uint64_t peak_live_bytes = 0; // most gathered bytes live at once
    // Most comm_buffers bytes at once: gathered units, plus the scratch of a unit's
    // reduce-scatter while it runs.
    std::uint64_t peak_buffer_bytes = 0;
};

// Replays the schedule: an acquire gathers the unit unless live; with prefetch K, each acquire
// also gathers the next K distinct units the schedule will acquire; a released unit is freed
// unless it is within that prefetch window; a reduce adds reduce_scratch[unit] while it lasts.
GatherSimulation simulate_gathers(const std::vector<GatherEvent>& schedule,
                                  const std::vector<std::uint64_t>& unit_bytes, int prefetch,
                                  const std::vector<std::uint64_t>& reduce_scratch = {});

// The units the schedule acquires next after position `pos`, up to k distinct ones.
std::vector<int> upcoming_units(const std::vector<GatherEvent>& schedule, std::size_t pos, int k);

} // namespace shardlab
