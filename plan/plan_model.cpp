// Parameter counts and units, from the layout a run builds.
#include "plan/plan_model.h"

#include "core/error.h"
#include "model/model_presets.h"
#include "model/param_layout.h"

#include <fmt/format.h>

#include <cmath>

namespace shardlab {

std::size_t PlanModel::unpadded_params() const {
    return arch() == Architecture::params_only ? params : config.num_params();
}

namespace {
// Units, parameter count and the final unit from the layout a run builds (padding included).
void fill_units(PlanModel& m, const ModelConfig& c) {
    const ParamLayout layout(c);
    m.unit_numel = layout.unit_numels();
    m.params = layout.total_numel();
    m.final_unit = layout.final_unit();
    m.config = c;
}
} // namespace

PlanModel plan_model_from(const ModelConfig& c, const std::string& name) {
    c.validate(); // the family's rules, each naming its fix (GPT-2's points at --arch llama)
    PlanModel m;
    m.name = name;
    fill_units(m, c); // the layout a run builds: the family's units, padding included
    return m;
}

PlanModel plan_model_params_only(double params) {
    if (!(params >= 1) || params > 1e15)
        throw UsageError(
            fmt::format("--params {} is not a usable parameter count; give e.g. 7.5e9", params));
    PlanModel m;
    m.name = fmt::format("{:.3g} params", params);
    m.config = {0, 0, 0, 0, 0, 0, 1, Architecture::params_only, 0, true}; // no shape
    m.params = std::size_t(std::llround(params));
    m.unit_numel = {m.params};
    return m;
}

PlanModel plan_model_preset(const std::string& name) {
    return plan_model_from(model_preset(name), name);
}

} // namespace shardlab
