// The squared L2 norm of a gradient given in parts (a rank's shards, in unit order), in double:
// element k of the parts' concatenation goes to running sum k % 8, and the eight are added
// pairwise at the end. The order depends only on k, so any split of the same sequence into parts
// (stage 0's whole buffers, stage 1-3's shards at N = 1) gives the same bits — and the eight
// independent sums vectorize, where one running sum is bound by the latency of each addition.
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cstddef>

namespace shardlab::cpu {

class SquaredNorm {
  public:
    template <typename T>
    void add(const T* x, std::size_t n); // T: float, bf16_t, f16_t
    double total() const;

  private:
    static constexpr int kLanes = 8;
    double lane_[kLanes] = {};
    std::size_t count_ = 0; // elements added so far: the next one's k
};

} // namespace shardlab::cpu
