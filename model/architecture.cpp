// The architectures' names.
#include "model/architecture.h"

#include "core/error.h"

namespace shardlab {

Architecture parse_architecture(const std::string& name) {
    if (name == "gpt2") return Architecture::gpt2;
    if (name == "llama") return Architecture::llama;
    throw UsageError("--arch " + name + " is not an architecture; use gpt2 or llama");
}

void require_family_built(Architecture a) {
    if (a == Architecture::params_only)
        throw UsageError("a bare parameter count (plan --params) is no model to build");
}

const char* architecture_name(Architecture a) {
    switch (a) {
    case Architecture::gpt2:
        return "gpt2";
    case Architecture::llama:
        return "llama";
    case Architecture::params_only:
        return "params";
    }
    return "?";
}

} // namespace shardlab
