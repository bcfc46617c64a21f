// What the plan can know of a backend's GEMM workspace (docs/MEMORY.md section 11): the CPU
// backend's OpenBLAS path takes none for fp32 and widens 16-bit operands into fp32 workspace of
// M·K + K·N + M·N floats a product (model/kernels/cpu/gemm.h); oneDNN's scratchpad and cuBLAS's
// workspace are sized by the library at run time and are not modelled.
#pragma once

namespace shardlab {

enum class GemmWorkspace {
    unmodelled,      // the library sizes it (oneDNN, cuBLAS): the plan predicts no workspace
    none,            // OpenBLAS fp32: no workspace
    widened_operands // OpenBLAS 16-bit: A, B and C widened to fp32, per product
};

} // namespace shardlab
