// The Llama's model half of the registry (model/families.h): LlamaModel and its initialisation.
#include "model/families.h"
#include "model/llama/llama_init.h"
#include "model/llama/llama_model.h"

namespace shardlab {

// Named, not anonymous: the library is a unity build, and every family names its parts alike.
namespace llama {
std::unique_ptr<Model> make(const ModelConfig& config, int batch, int seq,
                            CheckpointPolicy checkpoint, DType dtype, DeviceContext& context,
                            Ops& ops, AttentionKind /*flash: make_model checked*/) {
    return std::make_unique<LlamaModel>(config, batch, seq, checkpoint, dtype, context, ops);
}

// Each element from (seed, tensor, element) alone: any rank draws only its shard.
InitialValues initial(const ModelConfig&, const ParamLayout& layout, std::uint64_t seed) {
    return [&layout, seed](int unit, std::uint64_t begin, std::uint64_t count, float* out) {
        init_range(layout, unit, seed, begin, count, out, llama_init_rule);
    };
}
} // namespace llama

extern constinit const FamilyModel llama_family_model = {llama::make, llama::initial};

} // namespace shardlab
