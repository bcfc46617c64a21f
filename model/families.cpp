// model/family_list.h's lines as a table of FamilyModel, indexed by Architecture.
#include "model/families.h"

#include "core/error.h"
#include "model/family.h"

namespace shardlab {

#define SHARDLAB_FAMILY(name) extern const FamilyModel name##_family_model;
#include "model/family_list.h"
#undef SHARDLAB_FAMILY

namespace {
const FamilyModel* const kModels[] = {
#define SHARDLAB_FAMILY(name) &name##_family_model,
#include "model/family_list.h"
#undef SHARDLAB_FAMILY
};
static_assert(sizeof(kModels) / sizeof(kModels[0]) == std::size_t(Architecture::params_only),
              "one model per architecture");

const FamilyModel& model_of(Architecture a) {
    require_family_built(a); // a bare parameter count has none: throws, saying so
    return *kModels[int(a)];
}
} // namespace

std::unique_ptr<Model> make_model(const ModelConfig& config, int batch, int seq,
                                  CheckpointPolicy checkpoint, DType dtype, DeviceContext& context,
                                  Ops& ops, AttentionKind attention) {
    require_attention(family(config.arch), attention); // a family without a materializing kernel
    return model_of(config.arch)
        .make(config, batch, seq, checkpoint, dtype, context, ops, attention);
}

InitialValues initial_values(const ModelConfig& config, const ParamLayout& layout,
                             std::uint64_t seed) {
    return model_of(config.arch).initial_values(config, layout, seed);
}

std::vector<std::vector<float>> init_model(const ModelConfig& config, const ParamLayout& layout,
                                           std::uint64_t seed) {
    return init_all(layout, initial_values(config, layout, seed));
}

} // namespace shardlab
