// Ring ReduceScatter. In step k rank r sends its partial sum of chunk (r-k-1) to the right and
// receives the left neighbour's partial of chunk (r-k-2), adding its own contribution. After
// N-1 steps the chunk that arrives is chunk r, complete. Chunk j is always summed in the same
// order — rank j+1 first, rank j last — whatever the timing, so the bits are reproducible.
#include "comm/algorithms.h"
#include "comm/chunking.h"

#include <cstring>

namespace shardlab::algo {

void ring_reduce_scatter(CollectiveContext& c, const void* send, void* recv, std::size_t count,
                         DType t, ReduceOp op) {
    const int n = c.size(), r = c.rank();
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, n};
    const float divisor = op == ReduceOp::avg ? float(n) : 1.0f;
    auto* in = static_cast<const char*>(send);
    auto own = [&](int j) { return in + ch.offset(j) * es; };

    if (c.trace) c.trace->phase("reduce-scatter");
    if (n == 1) {
        scale_down(recv, own(0), count, t, divisor); // a copy when summing
        return;
    }
    // Two chunk-sized halves of scratch: the partial we send, and the partial we receive.
    char* scratch = static_cast<char*>(c.scratch.get(2 * ch.max_size() * es));
    char* outgoing = scratch;
    char* incoming = scratch + ch.max_size() * es;

    const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
    std::memcpy(outgoing, own(ring_mod(r - 1, n)), ch.size(ring_mod(r - 1, n)) * es);
    for (int k = 0; k < n - 1; ++k) {
        const int send_chunk = ring_mod(r - k - 1, n), recv_chunk = ring_mod(r - k - 2, n);
        const std::size_t m = ch.size(recv_chunk);
        c.transport.sendrecv(outgoing, ch.size(send_chunk) * es, right, incoming, m * es, left);
        const bool last = k == n - 2; // recv_chunk == r: finish into the output
        if (last)
            reduce_add(recv, incoming, own(recv_chunk), m, t, divisor);
        else
            reduce_add(outgoing, incoming, own(recv_chunk), m, t, 1.0f);
        if (c.trace) {
            c.trace->transfer(k, true, right, send_chunk, ch.size(send_chunk));
            c.trace->transfer(k, false, left, recv_chunk, m);
            c.trace->buffer(k, last ? "recv (own chunk, final)" : "partial sum",
                            last ? recv : outgoing, m, t);
        }
    }
}

} // namespace shardlab::algo
