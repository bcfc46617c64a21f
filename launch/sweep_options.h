// The message-size sweep flags `collectives bench` and `calibrate` share, with nccl-tests' names
// (-b MIN -e MAX -f FACTOR, --iters, --warmup), and the nodes they run on (--ranks-per-node).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace shardlab {

struct SweepOptions {
    std::string min_bytes, max_bytes; // K/M/G suffixes
    int factor = 2, iters = 20, warmup = 5;
    int ranks_per_node = 0; // 0: detect
};

void add_sweep_options(CLI::App& cmd, SweepOptions& o);

// MIN, MIN*F, ... up to MAX; a UsageError for a range or factor that makes no sweep.
std::vector<std::size_t> sweep_sizes(const SweepOptions& o);

} // namespace shardlab
