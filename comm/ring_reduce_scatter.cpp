// Ring ReduceScatter. In step k rank r sends its partial sum of chunk (r-k-1) to the right and
// receives the left neighbour's partial of chunk (r-k-2), adding its own contribution. After
// N-1 steps the chunk that arrives is chunk r, complete. Chunk j is always summed in the same
// order — rank j+1 first, rank j last — whatever the timing, so the bits are reproducible.
#include "comm/algorithms.h"
#include "comm/chunking.h"

namespace shardlab::algo {

void ring_reduce_scatter(CollectiveContext& c, const void* send, void* recv, std::size_t count,
                         DType t, ReduceOp op) {
    const int n = c.size(), r = c.rank();
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, n};
    const float divisor = op == ReduceOp::avg ? float(n) : 1.0f;
    auto* in = static_cast<const char*>(send);
    auto own = [&](int j) { return in + ch.offset(j) * es; };

    c.report([](CollectiveTrace& tr) { tr.phase("reduce-scatter"); });
    if (n == 1) { // the sum of one contribution, divided by N = 1: a copy (none in place)
        c.stream.memcpy(recv, own(0), count * es);
        return;
    }
    // Two chunk-sized halves of scratch: the partial we send, and the partial we receive.
    Allocation scratch = c.scratch(2 * ch.max_size() * es);
    char* outgoing = scratch.as<char>();
    char* incoming = outgoing + ch.max_size() * es;

    const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
    c.stream.memcpy(outgoing, own(ring_mod(r - 1, n)), ch.size(ring_mod(r - 1, n)) * es);
    for (int k = 0; k < n - 1; ++k) {
        const int send_chunk = ring_mod(r - k - 1, n), recv_chunk = ring_mod(r - k - 2, n);
        const std::size_t m = ch.size(recv_chunk);
        c.transport.sendrecv(c.stream, outgoing, ch.size(send_chunk) * es, right, incoming, m * es,
                             left);
        const bool last = k == n - 2; // recv_chunk == r: finish into the output
        void* sum = last ? recv : outgoing;
        c.elements.reduce_add(c.stream, sum, incoming, own(recv_chunk), m, t,
                              last ? divisor : 1.0f);
        c.report([=, sent = ch.size(send_chunk)](CollectiveTrace& tr) {
            tr.transfer(k, true, right, send_chunk, sent);
            tr.transfer(k, false, left, recv_chunk, m);
            tr.buffer(k, last ? "recv (own chunk, final)" : "partial sum", sum, m, t);
        });
    }
}

} // namespace shardlab::algo
