// One contiguous range of [0, n) per thread of an OpenMP team: how the CPU's loops split their work
// (model/kernels/cpu/parallel.h says why ranges). Without OpenMP (the fuzzing build links none) the
// whole range runs on the calling thread.
#pragma once

#include <cstddef>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace shardlab {

// Calls fn(lo, hi) once per thread of the team with the thread's share of [0, n) (none for an
// empty share).
template <typename Fn>
void parallel_ranges(std::size_t n, Fn&& fn) {
#ifdef _OPENMP
#pragma omp parallel
    {
        const std::size_t t = std::size_t(omp_get_thread_num()),
                          nt = std::size_t(omp_get_num_threads());
        const std::size_t lo = n * t / nt, hi = n * (t + 1) / nt;
        if (lo < hi) fn(lo, hi);
    }
#else
    if (n) fn(std::size_t(0), n);
#endif
}

// Whether the caller already runs inside a team (then a nested team would only cost).
inline bool in_parallel_team() {
#ifdef _OPENMP
    return omp_in_parallel();
#else
    return false;
#endif
}

} // namespace shardlab
