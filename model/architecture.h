// Architecture: which model family a config describes — the key of the family registry
// (model/families.h), written into weights and checkpoints as "arch", and what `--arch` names.
// params_only is plan's alone: a bare parameter count (`plan --params`), no model to build.
#pragma once

#include <string>

namespace shardlab {

enum class Architecture { gpt2, llama, params_only };

// "gpt2" | "llama"; throws UsageError naming the choices for anything else (params_only has no
// name: it is never parsed).
Architecture parse_architecture(const std::string& name);
const char* architecture_name(Architecture a); // "gpt2", "llama", "params"
// Throws UsageError when the architecture has no model (and layout) to build: a bare parameter
// count (plan --params) is none.
void require_family_built(Architecture a);

} // namespace shardlab
