// Causal attention's rate on this backend: the model's attention kernels (flash and
// materialising) timed through Ops over the calibration shape, forward and backward apart, and
// charged with the FLOPs docs/TIME.md section 5 counts (attention_flop in plan/time_model.h).
// They run at their own rate, not the GEMM library's: on the CPU the flash kernels reach about
// half of OpenBLAS's rate on the same machine.
#pragma once

#include "model/attention_kind.h"
#include "model/backend.h"
#include "plan/machine_profile.h"

#include <mpi.h>

namespace shardlab {

// qkv [batch, seq, (heads + 2 kv_heads) head_dim] in dtype t, as the model's call (a Llama's
// grouped-query flash attention; the materialising kernels at kv_heads = heads); the median of
// `reps` calls each, the slowest rank's (collective over comm).
AttentionRate measure_attention_rate(Backend& backend, DType t, AttentionKind kind, int batch,
                                     int seq, int hidden, int heads, int kv_heads, int reps,
                                     MPI_Comm comm);

} // namespace shardlab
