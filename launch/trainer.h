// `shardlab train`: the data-parallel training run — data, model, ZeRO engine, the step loop with
// its log lines, validation, checkpoints, sampling, and the per-rank report.
#pragma once

#include "launch/train_options.h"

namespace shardlab {

int run_training(const TrainOptions& options);

} // namespace shardlab
