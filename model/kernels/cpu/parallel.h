// How the CPU kernels split work over the OpenMP team: one contiguous range per thread. Hot loops
// are written as functions over a range and marked SHARDLAB_TARGET_CLONES, so each is compiled
// for AVX-512, AVX2 and baseline x86-64 (an OpenMP-outlined loop body would get only the
// baseline). Sums over a dimension always run in index order inside one range, so results never
// depend on the thread count.
#pragma once

#include <omp.h>

#include <cstddef>

namespace shardlab::cpu {

// Calls fn(lo, hi) once per thread of the team with the thread's share of [0, n).
template <typename Fn>
void parallel_ranges(std::size_t n, Fn&& fn) {
#pragma omp parallel
    {
        const std::size_t t = std::size_t(omp_get_thread_num()),
                          nt = std::size_t(omp_get_num_threads());
        const std::size_t lo = n * t / nt, hi = n * (t + 1) / nt;
        if (lo < hi) fn(lo, hi);
    }
}

} // namespace shardlab::cpu
