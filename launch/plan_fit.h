// `plan --fit`'s answer on the terminal and in JSON: the ranked configurations with their memory,
// bytes per link class, time breakdown and the `shardlab train` command that runs each; or, when
// nothing fits, the smallest configuration and what would make it fit.
#pragma once

#include "plan/fit_search.h"

#include <nlohmann/json.hpp>

#include <string>

namespace shardlab {

// What the train command needs beyond the configuration: the model's flags as train takes them
// (" --preset tiny --layers 6"), and " --ranks-per-node K" when the nodes are declared rather than
// found (one machine playing several nodes).
struct FitCommandLine {
    std::string model_flags, layout_flags;
};

// Prints the answer; returns `plan`'s exit status (0, or 1 when nothing fits) and fills `out`.
int print_fit(const FitResult& r, const FitRequest& q, const PlanModel& model,
              const PlanOptions& base, const FitCommandLine& cmd, nlohmann::json& out);

// `mpirun -np N shardlab train ...` for one configuration.
std::string train_command(const PlanOptions& o, const FitCommandLine& cmd);

} // namespace shardlab
