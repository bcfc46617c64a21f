// The collective algorithms shardlab can run, by name: `--algo ring|hd|hier|native`.
//   ring    the plain ring family (comm/ring_*.cpp): the teaching version, and the default;
//   hd      halving-doubling (Rabenseifner) all-reduce (comm/halving_doubling_all_reduce.cpp);
//   hier    two-level, intra-node then inter-node (comm/hierarchical_*.cpp);
//   native  the library's own (MPI_*, nccl*), whose internal bytes shardlab cannot see.
// Which operations each one implements is the table in comm/algorithm_table.cpp.
#pragma once

#include <string>

namespace shardlab {

enum class Algo { ring, native, hd, hier };
Algo parse_algo(const std::string& name); // throws UsageError naming the valid ones
const char* algo_name(Algo a);

} // namespace shardlab
