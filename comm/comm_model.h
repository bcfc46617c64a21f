// The communication model: exactly how many bytes each rank sends in one call of each of
// shardlab's own algorithms (docs/COLLECTIVES.md derives every line), and nccl-tests' bus
// bandwidth factors. This is the one place these formulas live; `plan`, `show` and `bench` ask it.
#pragma once

#include "comm/algo.h"
#include "comm/collective_op.h"
#include "comm/link_bytes.h"
#include "comm/node_layout.h"

#include <cstddef>
#include <cstdint>

namespace shardlab {

// Bytes rank `rank` of `n` sends in one call on a buffer of `count` elements of `elem_bytes`.
std::uint64_t ring_bytes_sent(CollectiveOp op, std::size_t count, std::size_t elem_bytes, int n,
                              int rank, int root);

// Bytes rank `rank` sends in one call of (op, algo) over a communicator laid out as `layout`,
// split by the link class each crosses (docs/COLLECTIVES.md, "Bytes by link class"). Native
// algorithms: zeros (their bytes are the library's business). Throws UsageError where the table
// has no such algorithm or the layout does not suit it (hier: equal nodes).
LinkBytes predicted_bytes_sent(CollectiveOp op, Algo algo, std::size_t count,
                               std::size_t elem_bytes, const NodeLayout& layout, int rank,
                               int root);

// Steps of the ring algorithm for op over n ranks: each step every rank sends one chunk (S/N
// bytes) to its right neighbour — all-gather and reduce-scatter N-1, all-reduce 2(N-1) (a
// reduce-scatter, then an all-gather); 0 at N = 1. The alpha-beta model charges alpha + beta *
// chunk per step (docs/TIME.md). Throws UsageError for the rooted ops, whose steps differ by rank.
int ring_steps(CollectiveOp op, int n);

// nccl-tests: busbw = algbw * factor, so that busbw compares with the link's peak for any N.
double bus_bandwidth_factor(CollectiveOp op, int n);

} // namespace shardlab
