// The CUDA driver API as the SIMT emulator provides it (test infrastructure: never in a real CUDA
// build): only the stream memory operation shardlab uses, cuStreamWaitValue32, which a stream
// uses to wait for a word of pinned host memory. A real build takes it from the driver through
// cudaGetDriverEntryPointByVersion; so does the emulator, which returns this stand-in.
#pragma once

#include "emu/include/cuda_runtime.h"

#include <cstdint>

using CUstream = cudaStream_t;
using CUdeviceptr = unsigned long long;
using cuuint32_t = std::uint32_t;
enum CUresult { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_NOT_SUPPORTED = 801 };
#define CUDAAPI
constexpr unsigned CU_STREAM_WAIT_VALUE_GEQ = 0x0;

// Work enqueued on the stream after this starts once (int32_t)(*addr - value) >= 0. The stream's
// own worker waits (not the host-function thread), as the GPU's stream does.
CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned flags);
