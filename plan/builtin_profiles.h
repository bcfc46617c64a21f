// The built-in machine profiles: common GPU nodes (DGX H100, DGX H200, DGX A100, an H100 PCIe node)
// from published figures — vendor datasheets for the rates, NCCL's own tuning table for the link
// latencies — each value with its source under "sources" (docs/TIME.md "Built-in profiles").
// They are data, in plan/builtin_profiles.json (compiled in), read through the same checks as a
// measured profile. Peaks, not measurements: a real node reaches less.
#pragma once

#include "plan/machine_profile.h"

#include <string>
#include <vector>

namespace shardlab {

std::vector<std::string> builtin_profile_names(); // "a100-sxm", "h100-pcie", "h100-sxm", "h200-sxm"
// Their names in one string, for messages and help: "a100-sxm, h100-pcie, ..." (with ", ").
std::string builtin_profile_list(const char* separator = ", ");
// The built-in of that name, or nullptr.
const MachineProfile* builtin_profile(const std::string& name);

} // namespace shardlab
