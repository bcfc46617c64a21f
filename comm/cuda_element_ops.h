// The CUDA backend's element operations: the ring's reduce step as a kernel on the comm stream,
// with the CPU loop's arithmetic ((a + b) / divisor in fp32, rounded once), so a ring over GPUs
// gives the same bits as the same ring over CPUs.
#pragma once

#include "comm/element_ops.h"

#include <memory>

namespace shardlab {

// Defined only in builds with CUDA or its emulator (the CUDA backend is their one user).
std::unique_ptr<ElementOps> make_cuda_element_ops();

} // namespace shardlab
