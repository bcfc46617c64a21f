// The ring schedules of comm/ring_reduce_scatter.cpp and comm/ring_all_gather.cpp, over Segments.
#include "comm/segmented_ring.h"

#include "comm/chunking.h"
#include "core/error.h"

#include <algorithm>

namespace shardlab {

std::size_t Segments::offset(int j) const {
    std::size_t o = 0;
    for (int i = 0; i < j; ++i) o += sizes[std::size_t(i)];
    return o;
}

std::size_t Segments::max_size() const {
    return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

namespace algo {

void ring_reduce_scatter_v(CollectiveContext& c, const void* send, void* recv, const Segments& seg,
                           DType t, float divisor) {
    const int n = c.size(), r = c.rank();
    const std::size_t es = dtype_size(t);
    auto* in = static_cast<const char*>(send);
    auto own = [&](int j) { return in + seg.offset(j) * es; };
    if (n == 1) {
        if (divisor == 1.0f) {
            c.stream.memcpy(recv, own(0), seg.size(0) * es);
        } else { // a/d computed as (a + 0)/d would need zeros; there is no such caller
            check(false, "ring_reduce_scatter_v: a divisor over one rank");
        }
        return;
    }
    Allocation scratch = c.scratch(2 * seg.max_size() * es);
    char* outgoing = scratch.as<char>();
    char* incoming = outgoing + seg.max_size() * es;
    const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
    c.stream.memcpy(outgoing, own(ring_mod(r - 1, n)), seg.size(ring_mod(r - 1, n)) * es);
    for (int k = 0; k < n - 1; ++k) {
        const int send_seg = ring_mod(r - k - 1, n), recv_seg = ring_mod(r - k - 2, n);
        const std::size_t m = seg.size(recv_seg);
        c.transport.sendrecv(c.stream, outgoing, seg.size(send_seg) * es, right, incoming, m * es,
                             left);
        const bool last = k == n - 2;
        c.elements.reduce_add(c.stream, last ? recv : outgoing, incoming, own(recv_seg), m, t,
                              last ? divisor : 1.0f);
    }
}

void ring_all_gather_v(CollectiveContext& c, const void* send, void* recv, const Segments& seg,
                       DType t) {
    const int n = c.size(), r = c.rank();
    const std::size_t es = dtype_size(t);
    auto* out = static_cast<char*>(recv);
    auto at = [&](int j) { return out + seg.offset(j) * es; };
    c.stream.memcpy(at(r), send, seg.size(r) * es);
    const int right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
    for (int k = 0; k < n - 1; ++k) {
        const int send_seg = ring_mod(r - k, n), recv_seg = ring_mod(r - k - 1, n);
        c.transport.sendrecv(c.stream, at(send_seg), seg.size(send_seg) * es, right, at(recv_seg),
                             seg.size(recv_seg) * es, left);
    }
}

} // namespace algo
} // namespace shardlab
