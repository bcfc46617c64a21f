// The families' parameter layouts: the one place an architecture picks the sharding units
// ParamLayout holds. Apart from model/families.h (the models) so that what only reads or writes
// weights — and the safetensors fuzzer — links the layouts and no model.
#pragma once

#include "model/model_config.h"

#include <vector>

namespace shardlab {

struct ParamUnit;
// The family's parameters as sharding units in ParamLayout's order (embeddings, one unit per
// block, the final unit): model/gpt2/gpt_layout.h, model/llama/llama_layout.h. Throws UsageError
// for a bare parameter count, which has no layout.
std::vector<ParamUnit> family_units(const ModelConfig& config);

} // namespace shardlab
