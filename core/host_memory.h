// How much memory this machine can still give the processes of a run: the kernel's estimate of
// what can be allocated without swapping (MemAvailable) plus free swap, and no more than the
// process's cgroup leaves below its limit (a container's memory.max). For refusing up front a run
// that cannot fit, instead of letting it grow until the kernel's OOM killer ends it.
#pragma once

#include <cstdint>
#include <optional>

namespace shardlab {

// Bytes, or nothing where /proc/meminfo cannot be read.
std::optional<std::uint64_t> available_host_bytes();

} // namespace shardlab
