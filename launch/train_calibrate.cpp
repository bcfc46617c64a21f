// The calibration `shardlab calibrate` would make with --preset of this model, --micro-batch of
// this run and --dtypes of its precision; the collectives swept from 4 KiB to 4 MiB (calibrate's
// default), three timings each.
#include "launch/train_calibrate.h"

#include "launch/device_options.h"
#include "measure/calibrate.h"

namespace shardlab {

MachineProfile calibrate_for_run(const DeviceOptions& device, const ModelConfig& config,
                                 int micro_batch, Precision precision, const NodeLayout& nodes) {
    CalibrateSpec spec = calibrate_spec_for(config, micro_batch);
    spec.dtypes = {param_dtype(precision)};
    for (std::size_t b = 4096; b <= (4u << 20); b *= 4) spec.sweep.sizes.push_back(b);
    const auto backend = make_backend(device, MPI_COMM_WORLD);
    const auto world = backend->communicator(MPI_COMM_WORLD);
    world->set_node_layout(nodes);
    return calibrate_machine(*backend, *world, spec);
}

} // namespace shardlab
