// /proc/meminfo and the cgroup v2 limit, read for available_host_bytes (host_memory.h).
#include "core/host_memory.h"

#include <algorithm>
#include <fstream>
#include <string>

namespace shardlab {

namespace {
// What the process's cgroup (v2) may still allocate: memory.max less memory.current; nothing
// where there is no limit ("max") or no cgroup v2.
std::optional<std::uint64_t> cgroup_room() {
    std::ifstream self("/proc/self/cgroup");
    std::string line, path;
    while (std::getline(self, line))
        if (line.rfind("0::", 0) == 0) path = line.substr(3);
    if (path.empty()) return std::nullopt;
    const std::string dir = "/sys/fs/cgroup" + (path == "/" ? "" : path);
    std::ifstream max(dir + "/memory.max"), current(dir + "/memory.current");
    std::string limit;
    std::uint64_t used = 0;
    if (!(max >> limit) || limit == "max" || !(current >> used)) return std::nullopt;
    const std::uint64_t cap = std::stoull(limit);
    return cap > used ? cap - used : 0;
}
} // namespace

std::optional<std::uint64_t> available_host_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    std::uint64_t kb = 0, available = 0, swap_free = 0;
    bool found = false;
    while (meminfo >> key >> kb) {
        std::getline(meminfo, unit); // " kB"
        if (key == "MemAvailable:") available = kb * 1024, found = true;
        if (key == "SwapFree:") swap_free = kb * 1024;
    }
    if (!found) return std::nullopt;
    const std::uint64_t room = available + swap_free;
    const std::optional<std::uint64_t> cgroup = cgroup_room();
    return cgroup ? std::min(room, *cgroup) : room;
}

} // namespace shardlab
