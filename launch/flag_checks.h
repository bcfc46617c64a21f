// Range checks for numeric flags: a value outside the range (or NaN / Inf) stops the command
// before it costs anything, with a message naming the flag and the valid range.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace shardlab {

// Finite and within [lo, hi]; lo_open / hi_open exclude the end (e.g. beta in [0, 1)). hi may be
// infinity (no upper end).
CLI::Validator in_range(double lo, double hi, bool lo_open = false, bool hi_open = false);
// The same for a flag kept in fp32 (the optimizer's settings): the value is checked as fp32 holds
// it, so 1e-50 (0 in fp32) is no epsilon, 0.99999999999 (1 in fp32) no beta, 1e39 (inf) no rate.
CLI::Validator in_fp32_range(double lo, double hi, bool lo_open = false, bool hi_open = false);

// An integer flag of at least `lo` (e.g. --heads 1 and up).
CLI::Validator at_least(long long lo);
// A seed: a whole number from 0 to 2^64 - 1, refused outside it (an unsigned parse would wrap -1
// and clamp 2^64 and more, making different seeds one run).
CLI::Validator seed_range();
// 0 (which means `zero_means`) or a number in [lo, hi]: e.g. a timeout too short to be sane.
CLI::Validator zero_or_in_range(double lo, double hi, const std::string& zero_means);

// A comma-separated flag value's items ("ring,hd" -> ring, hd; empty items dropped).
std::vector<std::string> split_list(const std::string& text);

// A name (or with `list`, comma-separated names) that `parse` accepts: parse_op, parse_algo,
// parse_dtype. Checked as the flags are parsed, before MPI starts, so a bad name is one message
// and not one per rank followed by MPI_Abort's banner.
CLI::Validator parsed_by(const std::function<void(const std::string&)>& parse,
                         const std::string& what, bool list = false);

} // namespace shardlab
