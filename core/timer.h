// Wall-clock seconds from a monotonic clock, and the median of repeated timings (what the
// benchmarks and `shardlab calibrate` report: robust to one slow run on a shared machine).
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace shardlab {

inline double now_seconds() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Runs fn once untimed (first touch of the pages, thread start-up), then `iters` times timed;
// returns the median seconds of one run. fn must finish its work before returning (synchronize
// the streams it enqueues on).
template <typename Fn>
double median_seconds(int iters, Fn&& fn) {
    std::vector<double> t;
    fn();
    for (int i = 0; i < iters; ++i) {
        const double t0 = now_seconds();
        fn();
        t.push_back(now_seconds() - t0);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

} // namespace shardlab
