// The sweep flags registered, and the message sizes they give: MIN, MIN·FACTOR, ... up to MAX.
#include "launch/sweep_options.h"

#include "core/error.h"
#include "launch/cli_util.h"
#include "launch/flag_checks.h"

namespace shardlab {

void add_sweep_options(CLI::App& cmd, SweepOptions& o) {
    cmd.add_option("--ranks-per-node", o.ranks_per_node,
                   "Declare nodes of K consecutive ranks (default: detect shared memory)")
        ->check(at_least(0));
    cmd.add_option("-b,--minbytes", o.min_bytes, "Smallest buffer S (K/M/G suffixes)");
    cmd.add_option("-e,--maxbytes", o.max_bytes, "Largest buffer S (K/M/G suffixes)");
    cmd.add_option("-f,--stepfactor", o.factor, "Size multiplier between rows");
    cmd.add_option("--iters", o.iters, "Timed iterations per size");
    cmd.add_option("--warmup", o.warmup, "Untimed iterations per size");
}

std::vector<std::size_t> sweep_sizes(const SweepOptions& o) {
    const std::size_t lo = parse_size(o.min_bytes), hi = parse_size(o.max_bytes);
    if (lo == 0 || lo > hi)
        throw UsageError("need 0 < -b MIN <= -e MAX; got -b " + o.min_bytes + " -e " + o.max_bytes);
    if (o.factor < 2) throw UsageError("-f FACTOR must be at least 2");
    if (o.iters < 1 || o.warmup < 0) throw UsageError("--iters must be >= 1 and --warmup >= 0");
    std::vector<std::size_t> sizes;
    for (std::size_t bytes = lo; bytes <= hi; bytes *= std::size_t(o.factor))
        sizes.push_back(bytes);
    return sizes;
}

} // namespace shardlab
