// Architecture: which model family a config describes — the key of the family registry
// (model/family.h), written into weights and checkpoints as "arch", and what `--arch` names.
// Its values are model/family_list.h's lines, in order; params_only is plan's alone: a bare
// parameter count (`plan --params`), no model to build.
#pragma once

#include <string>

namespace shardlab {

enum class Architecture {
#define SHARDLAB_FAMILY(name) name,
#include "model/family_list.h"
#undef SHARDLAB_FAMILY
    params_only
};

// A family's name ("gpt2", "llama", ...); throws UsageError naming the choices for anything else
// (params_only has no name: it is never parsed).
Architecture parse_architecture(const std::string& name);
const char* architecture_name(Architecture a); // the family's name, or "params"
// Throws UsageError when the architecture has no model (and layout) to build: a bare parameter
// count (plan --params) is none.
void require_family_built(Architecture a);

} // namespace shardlab
