// One case per family.
#include "model/families.h"

#include "model/gpt2/gpt_model.h"

namespace shardlab {

std::unique_ptr<Model> make_model(const ModelConfig& config, int batch, int seq,
                                  CheckpointPolicy checkpoint, DType dtype, DeviceContext& context,
                                  Ops& ops, AttentionKind attention) {
    require_family_built(config.arch);
    return std::make_unique<GPTModel>(config, batch, seq, checkpoint, dtype, context, ops,
                                      attention);
}

} // namespace shardlab
