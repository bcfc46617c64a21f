// The communication model: exactly how many bytes each rank sends in one call of each of
// shardlab's own algorithms (docs/COLLECTIVES.md derives every line), and nccl-tests' bus
// bandwidth factors. This is the one place these formulas live; `plan`, `show` and `bench` ask it.
#pragma once

#include "comm/collective_op.h"

#include <cstddef>
#include <cstdint>

namespace shardlab {

// Bytes rank `rank` of `n` sends in one call on a buffer of `count` elements of `elem_bytes`.
std::uint64_t ring_bytes_sent(CollectiveOp op, std::size_t count, std::size_t elem_bytes, int n,
                              int rank, int root);

// nccl-tests: busbw = algbw * factor, so that busbw compares with the link's peak for any N.
double bus_bandwidth_factor(CollectiveOp op, int n);

} // namespace shardlab
