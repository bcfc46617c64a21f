// Resident memory from /proc/self/status and /proc/self/smaps, and the tracker's explanation of it.
#include "launch/resident_memory.h"

#include "core/heap_trim.h"

#include <fstream>
#include <sstream>
#include <string>

namespace shardlab {

namespace {
// A "Vm...:  N kB" line of /proc/self/status, in bytes; 0 where there is none.
std::uint64_t status_bytes(const std::string& key) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;
    return 0;
}
} // namespace

std::uint64_t peak_resident_bytes() {
    return status_bytes("VmHWM:");
}

std::uint64_t current_resident_bytes() {
    return status_bytes("VmRSS:");
}

namespace {
// The resident pages of anonymous executable mappings (/proc/self/smaps): code generated at run
// time, oneDNN's JIT kernels. On a CPU with AMX its kernels for the step's shapes hold ~1.3 MB
// (0.5 MB on AVX-512 without it): RssFile cannot see them, and they are nobody's to track.
std::uint64_t resident_generated_code_bytes() {
    std::ifstream in("/proc/self/smaps");
    std::uint64_t bytes = 0;
    bool generated = false; // the mapping being read is anonymous and executable
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string first;
        fields >> first;
        if (first == "Rss:") {
            std::uint64_t kb = 0;
            if (generated && fields >> kb) bytes += kb * 1024;
        } else if (!first.empty() && first.back() != ':') {
            // A mapping's header: "start-end perms offset dev inode [path]".
            std::string perms, offset, dev, inode, path;
            fields >> perms >> offset >> dev >> inode >> path;
            generated = perms.size() == 4 && perms[2] == 'x' && inode == "0" &&
                        (path.empty() || path == "[heap]");
        }
    }
    return bytes;
}
} // namespace

std::uint64_t current_resident_code_bytes() {
    return status_bytes("RssFile:") + resident_generated_code_bytes();
}

std::uint64_t code_growth(const ResidentPeaks& r, const ResidentPhase& p) {
    return p.code > r.baseline_code ? p.code - r.baseline_code : 0;
}

std::uint64_t explained_peak_bytes(const ResidentPeaks& r, const ResidentPhase& p) {
    return r.baseline + code_growth(r, p) + p.ram_peak;
}

ResidentPhase resident_phase(const MemoryTracker& tracker, const MemoryCounts& peaks) {
    // On a GPU the device arena is not in this process's RAM (gpu_driver accounts for it there).
    const bool device_in_ram = tracker.device_in_ram();
    ResidentPhase p;
    p.rss_peak = peak_resident_bytes();
    p.code = current_resident_code_bytes();
    p.staging_peak = peaks.staging.peak;
    p.ram_peak = peaks.ram.peak;
    for (const Arena a : {Arena::device, Arena::host}) {
        if (a == Arena::device && !device_in_ram) continue;
        p.tracked_peak += peaks.total[int(a)].peak;
        p.workspace_peak += peaks.at(a, Category::workspace).peak;
        p.reserved += tracker.allocator(a).reserved();
    }
    return p;
}

void reset_peak_resident() {
    release_free_heap();
    std::ofstream("/proc/self/clear_refs") << "5";
}

} // namespace shardlab
