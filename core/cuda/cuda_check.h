// CUDA errors as shardlab::Error: the call that failed, CUDA's words for it and — under the SIMT
// emulator — the kernel, block, threads and source line of the fault. Included by .cu files only.
#pragma once

#include "core/error.h"

#include <cuda_runtime.h>

#include <string>

namespace shardlab::cuda {

inline std::string describe(cudaError_t e) {
    std::string s = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
#ifdef SHARDLAB_CUDA_EMU
    if (*emu::last_fault()) s += " (" + std::string(emu::last_fault()) + ")";
#endif
    return s;
}

inline void check_cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw Error(std::string(what) + " failed: " + describe(e));
}

} // namespace shardlab::cuda
