// Which collective a rank is in: its sequence number on this rank, the operation, its size and
// what the caller said it is for. Transports tag their messages with it and the watchdog reports
// it, so a hang names the collective and the unit it was moving.
#pragma once

#include <cstdint>
#include <string>

namespace shardlab {

struct CollectiveId {
    std::uint64_t seq = 0;   // 1, 2, ... in the order this rank enqueued its collectives
    std::string op;          // "allgather", "reduce_scatter/native", ...
    std::uint64_t bytes = 0; // the whole buffer (S)
    std::string what;        // what the caller said it is for ("unit h.3"); may be empty
};

// "#37 allgather of 1.18 MB (unit h.3)"
std::string describe(const CollectiveId& id);

} // namespace shardlab
