// GPT-2's model half of the registry (model/families.h): GPTModel and its initialisation.
#include "model/families.h"
#include "model/gpt2/gpt_init.h"
#include "model/gpt2/gpt_model.h"

namespace shardlab {

// Named, not anonymous: the library is a unity build, and every family names its parts alike.
namespace gpt2 {
std::unique_ptr<Model> make(const ModelConfig& config, int batch, int seq,
                            CheckpointPolicy checkpoint, DType dtype, DeviceContext& context,
                            Ops& ops, AttentionKind attention) {
    return std::make_unique<GPTModel>(config, batch, seq, checkpoint, dtype, context, ops,
                                      attention);
}

InitialValues initial(const ModelConfig& config, const ParamLayout& layout, std::uint64_t seed) {
    return gpt2_initial_values(layout, seed, config.layers);
}
} // namespace gpt2

extern constinit const FamilyModel gpt2_family_model = {gpt2::make, gpt2::initial};

} // namespace shardlab
