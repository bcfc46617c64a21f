// One case per family.
#include "model/family_units.h"

#include "core/error.h"
#include "model/gpt2/gpt_layout.h"
#include "model/llama/llama_layout.h"
#include "model/param_layout.h"

namespace shardlab {

std::vector<ParamUnit> family_units(const ModelConfig& config) {
    switch (config.arch) {
    case Architecture::gpt2:
        return gpt2_units(config);
    case Architecture::llama:
        return llama_units(config);
    case Architecture::params_only:
        break;
    }
    require_family_built(config.arch); // throws, saying what is missing
    throw UsageError("no parameter layout for this architecture");
}

} // namespace shardlab
