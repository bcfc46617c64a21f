// The time of one GEMM of a given shape and dtype on a backend, through Ops::gemm — the path the
// model's products take (cuBLAS; oneDNN or OpenBLAS on the CPU). `bench step` reads its step
// rate against it; `shardlab calibrate` times every shape of the model's step with it.
#pragma once

#include "model/backend.h"
#include "model/gemm_shape.h"

namespace shardlab {

// The median seconds of `reps` calls (after one untimed), each waited for; operands filled with
// small constants. Allocates the operands as workspace on the compute stream.
double gemm_seconds(Backend& backend, DType t, const GemmShape& shape, int reps);

} // namespace shardlab
