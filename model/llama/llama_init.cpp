// Llama's initialisation rule: RMSNorm weights 1, everything else normal(0, 0.02).
#include "model/llama/llama_init.h"

namespace shardlab {

InitRule llama_init_rule(const ParamInfo& p) {
    if (p.name.ends_with("norm.weight")) return {InitRule::one, 0}; // *_layernorm, model.norm
    return {InitRule::normal, 0.02};
}

} // namespace shardlab
