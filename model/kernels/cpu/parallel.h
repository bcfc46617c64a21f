// How the CPU kernels split work over the OpenMP team: one contiguous range per thread. Hot loops
// are written as functions over a range and marked SHARDLAB_TARGET_CLONES, so each is compiled
// for AVX-512, AVX2 and baseline x86-64 (an OpenMP-outlined loop body would get only the
// baseline). Sums over a dimension always run in index order inside one range, so results never
// depend on the thread count.
#pragma once

#include "core/parallel_ranges.h"

namespace shardlab::cpu {

using shardlab::parallel_ranges; // fn(lo, hi) once per thread of the team, its share of [0, n)

} // namespace shardlab::cpu
