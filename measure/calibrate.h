// `shardlab calibrate`'s measurement: the whole MachineProfile of this machine and rank layout,
// every rate timed on all ranks at once and reported for the slowest (docs/TIME.md "The machine
// profile" says how each is measured).
#pragma once

#include "measure/link_calibration.h"
#include "model/backend.h"
#include "model/model_config.h"
#include "plan/machine_profile.h"

#include <functional>
#include <string>
#include <vector>

namespace shardlab {

struct CalibrateSpec {
    ModelConfig config;                  // the model whose GEMM shapes are timed
    std::int64_t tokens = 0;             // micro-batch x sequence: M of the GEMMs
    nlohmann::json model;                // recorded in the profile
    std::vector<DType> dtypes;           // GEMM and memory-bound kernels, each
    int reps = 5;                        // timings per GEMM shape / kernel / copy (the median)
    std::size_t copy_bytes = 16 << 20;   // host<->device copy size
    std::int64_t adamw_params = 1 << 22; // the AdamW array (device and host)
    SweepSpec sweep;                     // the collectives' sizes
    std::function<void(const std::string&)> progress; // what is being measured (may be empty)
};

// The spec for a model at a micro-batch: its GEMM and attention shapes (micro-batch x context
// rows), the model recorded, AdamW over the model's parameters (at most 4M); the rest default.
CalibrateSpec calibrate_spec_for(const ModelConfig& config, int micro_batch);

// Collective over world (its node layout decides the link classes). Every rank returns the
// same profile.
MachineProfile calibrate_machine(Backend& backend, Communicator& world, const CalibrateSpec& spec);

} // namespace shardlab
