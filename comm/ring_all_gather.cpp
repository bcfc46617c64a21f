// Ring AllGather. After step k, rank r holds chunks r, r-1, ..., r-k-1: each step it forwards the
// chunk it received in the previous step to its right neighbour.
#include "comm/algorithms.h"
#include "comm/chunking.h"

namespace shardlab::algo {

void ring_all_gather(CollectiveContext& c, const void* send, void* recv, std::size_t count,
                     DType t) {
    const int n = c.size(), r = c.rank();
    const std::size_t es = dtype_size(t);
    const Chunking ch{count, n};
    auto* out = static_cast<char*>(recv);
    auto chunk_ptr = [&](int j) { return out + ch.offset(j) * es; };

    c.stream.memcpy(chunk_ptr(r), send, ch.size(r) * es); // nothing to do in place
    c.report([=](CollectiveTrace& tr) {
        tr.phase("all-gather");
        tr.buffer(-1, "recv", recv, count, t);
    });

    const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
    for (int k = 0; k < n - 1; ++k) {
        const int send_chunk = ring_mod(r - k, n), recv_chunk = ring_mod(r - k - 1, n);
        c.transport.sendrecv(c.stream, chunk_ptr(send_chunk), ch.size(send_chunk) * es, right,
                             chunk_ptr(recv_chunk), ch.size(recv_chunk) * es, left);
        c.report([=](CollectiveTrace& tr) {
            tr.transfer(k, true, right, send_chunk, ch.size(send_chunk));
            tr.transfer(k, false, left, recv_chunk, ch.size(recv_chunk));
            tr.buffer(k, "recv", recv, count, t);
        });
    }
}

} // namespace shardlab::algo
