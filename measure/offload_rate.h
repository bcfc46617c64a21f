// The offload pipeline's rate as a run gets it: offload/host_updater.h's HostUpdater itself, on
// units of the model's own layout (so its tensor segments, tiles and dtype conversions are the
// run's), timed end to end — gradient tiles down, widened, AdamW per segment, narrowed, parameters
// up. On the CPU backend the copies are memcpy on the copy stream's thread and share the cores with
// the update, which the bare kernel rate (measure/host_adamw_rate.h) cannot see.
#pragma once

#include "model/backend.h"
#include "model/model_config.h"

#include <mpi.h>

#include <cstdint>

namespace shardlab {

// Parameters per second of HostUpdater::update over the model's units in layout order (a unit
// larger than `max_params` skipped, at least one kept) with `param_dtype` parameters; the median
// of `reps` steps after one untimed, the slowest rank's.
double measure_offload_rate(Backend& backend, DType param_dtype, const ModelConfig& config,
                            std::int64_t max_params, int reps, MPI_Comm comm);

} // namespace shardlab
