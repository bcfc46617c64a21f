// One case per family.
#include "model/families.h"

#include "core/error.h"
#include "model/gpt2/gpt_model.h"

namespace shardlab {

std::unique_ptr<Model> make_model(const ModelConfig& config, int batch, int seq,
                                  CheckpointPolicy checkpoint, DType dtype, DeviceContext& context,
                                  Ops& ops, AttentionKind attention) {
    switch (config.arch) {
    case Architecture::gpt2:
        return std::make_unique<GPTModel>(config, batch, seq, checkpoint, dtype, context, ops,
                                          attention);
    case Architecture::llama:       // issue 25: its model is next
    case Architecture::params_only: // plan's bare count: no model
        break;
    }
    require_family_built(config.arch); // throws, saying what is missing
    throw UsageError("no model for this architecture");
}

} // namespace shardlab
