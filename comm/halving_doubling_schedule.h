// The halving-doubling schedule as data — who exchanges which blocks with whom in each step —
// shared by the algorithm (comm/halving_doubling_all_reduce.cpp) and the communication model
// (comm/comm_model.cpp), so the bytes the model predicts are those of the steps the algorithm runs.
//
// N ranks, p = the largest power of two <= N, e = N - p extra ranks. Ranks 0..2e-1 pair up
// (2i, 2i+1): the even one folds its whole buffer into the odd one and sits out; the odd one and
// ranks 2e.. are the p "active" ranks, renumbered 0..p-1. The buffer is cut into p blocks
// (Chunking{count, p}); active rank a ends the halving with block a, fully reduced.
#pragma once

#include "comm/chunking.h"

#include <cstddef>
#include <vector>

namespace shardlab {

struct HdStep {
    int peer = 0;                         // the partner's real rank
    std::size_t send_lo = 0, send_hi = 0; // elements this rank sends: [send_lo, send_hi)
    std::size_t keep_lo = 0, keep_hi = 0; // elements it receives (halving: and reduces)
};

struct HdSchedule {
    int n = 1, p = 1, extra = 0;
    int active = -1;  // this rank's number among the p active ranks; -1 if it folds
    int partner = -1; // the fold partner (rank +-1), -1 if none
    std::vector<HdStep> halving, doubling;
};

inline int hd_real_rank(int active, int extra) {
    return active < extra ? 2 * active + 1 : active + extra;
}

inline HdSchedule hd_schedule(int n, int rank, std::size_t count) {
    HdSchedule s;
    s.n = n;
    while (s.p * 2 <= n) s.p *= 2;
    s.extra = n - s.p;
    if (rank < 2 * s.extra) {
        s.partner = rank % 2 == 0 ? rank + 1 : rank - 1;
        s.active = rank % 2 == 0 ? -1 : rank / 2;
    } else {
        s.active = rank - s.extra;
    }
    if (s.active < 0) return s;
    const Chunking blocks{count, s.p};
    int lo = 0, hi = s.p; // blocks this rank is responsible for
    for (int mask = s.p / 2; mask >= 1; mask /= 2) {
        const int mid = lo + (hi - lo) / 2;
        const bool upper = (s.active & mask) != 0;
        const int klo = upper ? mid : lo, khi = upper ? hi : mid;
        const int slo = upper ? lo : mid, shi = upper ? mid : hi;
        s.halving.push_back({hd_real_rank(s.active ^ mask, s.extra), blocks.offset(slo),
                             blocks.offset(shi), blocks.offset(klo), blocks.offset(khi)});
        lo = klo, hi = khi;
    }
    // Doubling retraces the halving: send what this rank holds, receive the partner's half.
    for (int i = int(s.halving.size()) - 1; i >= 0; --i) {
        const HdStep& h = s.halving[std::size_t(i)];
        s.doubling.push_back({h.peer, h.keep_lo, h.keep_hi, h.send_lo, h.send_hi});
    }
    return s;
}

} // namespace shardlab
