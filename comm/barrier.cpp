// Dissemination barrier: in round k every rank signals rank + 2^k and waits for rank - 2^k.
// After ceil(log2 N) rounds each rank has (transitively) heard from every other.
#include "comm/algorithms.h"
#include "comm/chunking.h"

namespace shardlab::algo {

void dissemination_barrier(CollectiveContext& c) {
    const int n = c.size(), r = c.rank();
    for (int dist = 1; dist < n; dist *= 2)
        c.transport.sendrecv(c.stream, nullptr, 0, ring_mod(r + dist, n), nullptr, 0,
                             ring_mod(r - dist, n));
}

} // namespace shardlab::algo
