// A process's resident memory (Linux /proc) against what the tracker explains of it: the
// high-water mark of each phase of a run, the code mapped in or generated at run time, and the
// report's "explained" bytes (docs/MEMORY.md, section 11).
#pragma once

#include "core/memory_tracker.h"

#include <cstdint>

namespace shardlab {

// One phase of a run's resident memory: the process's resident-set high-water mark (VmHWM) over
// the phase, and what the tracker explains of it — the tracked peak (both arenas; of it workspace)
// and the caching allocators' reserve when the phase ended (they never give memory back, so that
// is the most they held during it), counted only for arenas that live in this process's RAM.
// Also the code resident when it ended: the file-backed pages (RssFile: the code and read-only data
// of the binary and its libraries, mapped in as first run — the GEMM kernels at the first step,
// say) and the code generated at run time (oneDNN's JIT kernels, in anonymous executable pages).
struct ResidentPhase {
    std::uint64_t rss_peak = 0, tracked_peak = 0, workspace_peak = 0, reserved = 0, code = 0;
    std::uint64_t staging_peak = 0; // declared host staging (MemoryCounts::staging)
    std::uint64_t ram_peak = 0;     // reserve + staging at one moment (MemoryCounts::ram)
};

// Resident memory by phase: the runtime baseline (VmRSS before the model is built: the binary,
// MPI, the thread pool, the token data), then init (building the model and engine), training (the
// steps) and end (final weights, sampling), the high-water mark reset at each phase's start.
// 0 where /proc does not tell.
struct ResidentPeaks {
    std::uint64_t baseline = 0, baseline_code = 0; // VmRSS, and of it the code (below)
    ResidentPhase init, training, end;
};
std::uint64_t peak_resident_bytes();
std::uint64_t current_resident_bytes(); // VmRSS
// RssFile + the resident pages of anonymous executable mappings (generated code)
std::uint64_t current_resident_code_bytes();
// Linux: "5" to /proc/self/clear_refs, after glibc's free heap is handed back (malloc_trim), so
// the next phase's mark starts from what the process holds, not what an earlier phase freed.
void reset_peak_resident();
// This moment's phase measurements: VmHWM since the last reset, and from `peaks` (the phase's
// tracked peaks) and the allocators now, the bytes the tracker explains.
ResidentPhase resident_phase(const MemoryTracker& tracker, const MemoryCounts& peaks);
// baseline + the code mapped in or generated since the baseline + the peak of the reserve of the
// arenas in RAM and the declared host staging together: what is explained of a phase's max RSS.
std::uint64_t explained_peak_bytes(const ResidentPeaks& r, const ResidentPhase& p);
std::uint64_t code_growth(const ResidentPeaks& r, const ResidentPhase& p); // the code's growth

} // namespace shardlab
