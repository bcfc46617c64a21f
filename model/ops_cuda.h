// The CUDA backend's Ops: cuBLAS for the GEMMs (fp32 accumulation), the kernels of
// model/kernels/cuda for the rest, every launch on the stream it is given. Scratch (attention's
// score matrices, the embedding backward's buckets, reduction partials) comes from the tracker as
// `workspace` and is released in stream order, like the CPU backend's GEMM workspace.
#pragma once

#include "core/memory_tracker.h"
#include "model/ops.h"

#include <memory>

namespace shardlab {

// Defined only in builds with CUDA or its emulator (the CUDA backend is their one user).
std::unique_ptr<Ops> make_cuda_ops(MemoryTracker& tracker);

} // namespace shardlab
