// SHARDLAB_UNROLL: `#pragma unroll` for nvcc, which then keeps small arrays indexed by the loop
// (fragments, accumulators, rows in flight) in registers; nothing for the emulator build, whose
// host compiler does not know the pragma (and needs no registers).
#pragma once

#ifdef SHARDLAB_CUDA_EMU
#define SHARDLAB_UNROLL
#else
#define SHARDLAB_UNROLL _Pragma("unroll")
#endif
