// The bytes the memory-bound kernels of one micro-batch move (docs/TIME.md section 5), as each
// family counts them from the kernels its model calls (Family::kernel_bytes). The GEMMs and
// attention are not here: their FLOPs come from the shapes (model/gemm_shape.h).
#pragma once

namespace shardlab {

// Bytes by the part of the model that moves them; block_* are one block's.
struct KernelBytes {
    double block_forward = 0, block_backward = 0;
    double head_forward = 0, head_backward = 0;
    double embed_forward = 0, embed_backward = 0;
};

} // namespace shardlab
