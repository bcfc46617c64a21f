// One case per family.
#include "model/families.h"

#include "core/error.h"
#include "model/gpt2/gpt_init.h"
#include "model/gpt2/gpt_model.h"
#include "model/llama/llama_init.h"
#include "model/llama/llama_model.h"

namespace shardlab {

std::unique_ptr<Model> make_model(const ModelConfig& config, int batch, int seq,
                                  CheckpointPolicy checkpoint, DType dtype, DeviceContext& context,
                                  Ops& ops, AttentionKind attention) {
    switch (config.arch) {
    case Architecture::gpt2:
        return std::make_unique<GPTModel>(config, batch, seq, checkpoint, dtype, context, ops,
                                          attention);
    case Architecture::llama:
        return std::make_unique<LlamaModel>(config, batch, seq, checkpoint, dtype, context, ops,
                                            attention);
    case Architecture::params_only: // plan's bare count: no model
        break;
    }
    require_family_built(config.arch); // throws, saying what is missing
    throw UsageError("no model for this architecture");
}

InitialValues initial_values(const ModelConfig& config, const ParamLayout& layout,
                             std::uint64_t seed) {
    switch (config.arch) {
    case Architecture::gpt2:
        return gpt2_initial_values(layout, seed, config.layers);
    case Architecture::llama:
        return [&layout, seed](int unit, std::uint64_t begin, std::uint64_t count, float* out) {
            init_range(layout, unit, seed, begin, count, out, llama_init_rule);
        };
    case Architecture::params_only:
        break;
    }
    require_family_built(config.arch);
    throw UsageError("no initialisation for this architecture");
}

std::vector<std::vector<float>> init_model(const ModelConfig& config, const ParamLayout& layout,
                                           std::uint64_t seed) {
    return init_all(layout, initial_values(config, layout, seed));
}

} // namespace shardlab
