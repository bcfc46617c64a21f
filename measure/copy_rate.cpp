// A copy of a few MB is long against a stream synchronisation, so timing single copies (median)
// measures the link, not the wait. Every source holds written pages (the first copy to the device
// buffer writes it) so no copy reads the zero page.
#include "measure/copy_rate.h"

#include "core/timer.h"
#include "measure/slowest_rank.h"

#include <cstring>
#include <vector>

namespace shardlab {

double copy_seconds(Stream& s, void* dst, const void* src, std::size_t bytes, int iters) {
    return median_seconds(iters, [&] {
        s.memcpy(dst, src, bytes);
        s.synchronize();
    });
}

CopyRates measure_copy_rates(DeviceContext& ctx, std::size_t bytes, int iters, MPI_Comm comm) {
    MemoryTracker& tracker = ctx.tracker();
    Stream& copy = ctx.copy();
    Allocation dev = tracker.allocate(bytes, Category::workspace, copy);
    Allocation pinned = tracker.allocate(bytes, Category::workspace, copy, Arena::host);
    std::vector<char> pageable(bytes, 1);
    copy.synchronize();
    // Written before it is read: untouched pages would all read as the kernel's one zero page.
    std::memset(pinned.data(), 1, bytes);
    auto rate = [&](void* dst, const void* src) {
        MPI_Barrier(comm); // every rank copies at once
        return double(bytes) / slowest_rank(copy_seconds(copy, dst, src, bytes, iters), comm);
    };
    CopyRates r;
    r.h2d_pinned = rate(dev.data(), pinned.data());
    r.d2h_pinned = rate(pinned.data(), dev.data());
    r.h2d_pageable = rate(dev.data(), pageable.data());
    r.d2h_pageable = rate(pageable.data(), dev.data());
    return r;
}

} // namespace shardlab
