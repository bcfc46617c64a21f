// The model half of the family registry: the one place an architecture picks its model and its
// initialisation. Callers (the session, the commands) hold a Model (model/model.h) made here and
// never name a family's class. Each family defines a FamilyModel constant in its folder
// (model/<name>/<name>_family_model.cpp), listed by model/family_list.h's line; its facts are the
// other half (model/family.h), kept apart so that reading weights or planning links no model.
#pragma once

#include "core/device_context.h"
#include "model/attention_kind.h"
#include "model/checkpoint_policy.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/ops.h"
#include "model/param_init.h"

#include <memory>

namespace shardlab {

struct FamilyModel {
    // The model for micro-batches of `batch` sequences of `seq` tokens (see make_model).
    std::unique_ptr<Model> (*make)(const ModelConfig& config, int batch, int seq,
                                   CheckpointPolicy checkpoint, DType dtype, DeviceContext& context,
                                   Ops& ops, AttentionKind attention);
    // The family's seeded initialisation (see initial_values).
    InitialValues (*initial_values)(const ModelConfig& config, const ParamLayout& layout,
                                    std::uint64_t seed);
};

// The model of `config`'s family for micro-batches of `batch` sequences of `seq` tokens, stored
// in `dtype`, running its Ops on `ops`. Throws UsageError for a shape the family cannot run.
std::unique_ptr<Model> make_model(const ModelConfig& config, int batch, int seq,
                                  CheckpointPolicy checkpoint, DType dtype, DeviceContext& context,
                                  Ops& ops, AttentionKind attention = AttentionKind::flash);

// The family's seeded initialisation of `layout` (the config's own): each element depends only on
// (seed, tensor, element), so any rank can draw only its shard. `layout` is kept by reference.
InitialValues initial_values(const ModelConfig& config, const ParamLayout& layout,
                             std::uint64_t seed);
// The whole model drawn so, as fp32, unit after unit.
std::vector<std::vector<float>> init_model(const ModelConfig& config, const ParamLayout& layout,
                                           std::uint64_t seed);

} // namespace shardlab
