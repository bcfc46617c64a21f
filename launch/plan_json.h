// A plan as JSON: what `plan --json` writes for one configuration, and what `plan --fit` lists.
#pragma once

#include "plan/memory_plan.h"

#include <nlohmann/json.hpp>

namespace shardlab {

nlohmann::json plan_json(const Plan& p);

} // namespace shardlab
