// Halving-doubling all-reduce (Rabenseifner; Thakur, Rabenseifner & Gropp 2005, Open MPI's choice
// for large messages). Recursive halving: in step k each active rank swaps half of what it is
// still responsible for with the rank 2^(log p - 1 - k) away and reduces the half it keeps; after
// log2 p steps it holds one block, reduced. Recursive doubling gathers the blocks back along the
// same pairs. A rank sends about 2(p-1)/p·S, the ring's volume, in 2·log2 p steps instead of
// 2(N-1). Non-power-of-two N: the extra ranks fold into a partner first (one full buffer each)
// and receive the result last. Each block is reduced on exactly one rank, so every rank ends with
// the same bits; the summation order differs from the ring's.
#include "comm/algorithms.h"
#include "comm/halving_doubling_schedule.h"

namespace shardlab::algo {

void halving_doubling_all_reduce(CollectiveContext& c, const void* send, void* recv,
                                 std::size_t count, DType t, ReduceOp op) {
    const int n = c.size();
    const std::size_t es = dtype_size(t);
    char* buf = static_cast<char*>(recv);
    // The first exchange reads the input where it is and every later one reads recv, which the
    // first one's reductions filled, so recv need not start as a copy of send (at 2 ranks, a
    // third of the bytes the call touches). Traced (collectives show), it does: the walkthrough
    // shows the whole buffer after each step.
    if (n == 1 || c.trace) c.stream.memcpy(recv, send, count * es);
    c.report([](CollectiveTrace& tr) { tr.phase("halving-doubling"); });
    if (n == 1) return; // the sum of one, divided by N = 1
    const HdSchedule s = hd_schedule(n, c.rank(), count);
    const float divisor = op == ReduceOp::avg ? float(n) : 1.0f;
    auto at = [&](std::size_t e) { return buf + e * es; };
    const char* input = c.trace ? buf : static_cast<const char*>(send);

    if (s.active < 0) { // fold in, then wait for the result
        c.transport.send(c.stream, input, count * es, s.partner);
        c.transport.recv(c.stream, recv, count * es, s.partner);
        return;
    }
    Allocation scratch = c.scratch(count * es);
    char* incoming = scratch.as<char>();
    if (s.partner >= 0) { // recv = input + the folded partner's: the halving starts from recv
        c.transport.recv(c.stream, incoming, count * es, s.partner);
        c.elements.reduce_add(c.stream, recv, input, incoming, count, t, 1.0f);
        input = buf;
    }
    int step = 0;
    for (const HdStep& h : s.halving) {
        const std::size_t keep = h.keep_hi - h.keep_lo;
        const char* from = &h == &s.halving.front() ? input : buf; // see the top
        c.transport.sendrecv(c.stream, from + h.send_lo * es, (h.send_hi - h.send_lo) * es, h.peer,
                             incoming, keep * es, h.peer);
        const bool last = &h == &s.halving.back();
        c.elements.reduce_add(c.stream, at(h.keep_lo), from + h.keep_lo * es, incoming, keep, t,
                              last ? divisor : 1.0f);
        c.report([=, k = step++](CollectiveTrace& tr) {
            tr.transfer(k, true, h.peer, -1, h.send_hi - h.send_lo);
            tr.transfer(k, false, h.peer, -1, keep);
            tr.buffer(k, "recv", recv, count, t);
        });
    }
    for (const HdStep& h : s.doubling) {
        c.transport.sendrecv(c.stream, at(h.send_lo), (h.send_hi - h.send_lo) * es, h.peer,
                             at(h.keep_lo), (h.keep_hi - h.keep_lo) * es, h.peer);
        c.report([=, k = step++](CollectiveTrace& tr) {
            tr.transfer(k, true, h.peer, -1, h.send_hi - h.send_lo);
            tr.transfer(k, false, h.peer, -1, h.keep_hi - h.keep_lo);
            tr.buffer(k, "recv", recv, count, t);
        });
    }
    if (s.partner >= 0) c.transport.send(c.stream, recv, count * es, s.partner);
}

} // namespace shardlab::algo
