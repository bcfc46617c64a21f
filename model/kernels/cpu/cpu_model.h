// The CPU's model name as the kernel reports it ("AMD EPYC 9B45"), for benchmark records.
#pragma once

#include <string>

namespace shardlab::cpu {

// From /proc/cpuinfo's "model name"; "unknown CPU" where it has none.
std::string cpu_model_name();

} // namespace shardlab::cpu
