// Llama initialisation as Hugging Face's LlamaPreTrainedModel._init_weights draws it: every
// nn.Linear and the embedding normal(0, initializer_range = 0.02), every RMSNorm weight 1 (no
// biases). Seeded per element (model/param_init.h): the same model at any rank count.
#pragma once

#include "model/param_init.h"

namespace shardlab {

InitRule llama_init_rule(const ParamInfo& p);

} // namespace shardlab
