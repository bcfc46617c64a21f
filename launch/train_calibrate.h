// `train --calibrate`: the machine profile measured at the start of the run, on its own ranks,
// model shape, micro-batch and dtype, so the time model beside the measurement
// (launch/train_time.h) prices this run with rates taken minutes, not days, before it — on a shared
// machine the load the run sees is the load the profile saw. Calibrated on a backend of its own,
// destroyed before the model is built: its buffers do not enter the run's memory report.
#pragma once

#include "comm/node_layout.h"
#include "launch/device_options.h"
#include "model/model_config.h"
#include "model/precision.h"
#include "plan/machine_profile.h"

#include <mpi.h>

namespace shardlab {

// Collective over MPI_COMM_WORLD (every rank returns the same profile). `nodes`: the run's node
// layout, so the link classes are the run's.
MachineProfile calibrate_for_run(const DeviceOptions& device, const ModelConfig& config,
                                 int micro_batch, Precision precision, const NodeLayout& nodes);

} // namespace shardlab
