// Inputs whose results are exact in every dtype, and the expected result computed in double
// precision element by element — so a benchmark can count wrong elements (#wrong) exactly.
// Inputs are small integers in [-8, 8]; sums over up to 32 ranks stay exact even in bf16.
#pragma once

#include "comm/collective_op.h"

#include <cstddef>

namespace shardlab {

// Value rank `rank` contributes at global element i.
double check_input(int rank, std::size_t i);

// Fills this rank's send buffer (call_sizes(...).send elements) for `op`.
void fill_check_inputs(const CollectiveCall& call, int n, int rank);

// Number of elements of this rank's recv buffer that differ from the exact expectation
// (sum only: an average of integers is not exact in 16-bit formats).
std::size_t count_wrong(const CollectiveCall& call, int n, int rank);

} // namespace shardlab
