// The CUDA runtime calls the rest of shardlab needs, behind a plain C++ header so that no other
// file includes cuda_runtime.h. Implemented in cuda_runtime_api.cu in a CUDA or emulator build,
// and in cuda_runtime_stub.cpp (which says clearly that CUDA was not built) otherwise.
#pragma once

#include "core/device.h"

#include <cstddef>
#include <string>

namespace shardlab::cuda {

bool runtime_built();
// Whether "device" memory is this process's RAM: the emulator's (-DSHARDLAB_CUDA=EMU) is; a GPU's
// is not; false without CUDA. The resident-memory report counts the device arena in RSS by it.
bool device_memory_in_ram();
void* device_malloc(int device, std::size_t bytes);
void device_free(int device, void* p) noexcept;
void* host_malloc_pinned(std::size_t bytes);
void host_free_pinned(void* p) noexcept;
void copy(void* dst, const void* src, std::size_t bytes); // cudaMemcpyDefault, synchronous
GpuQuery query(bool measure_free);                        // see query_gpus
std::string blas_libraries();                             // see cuda_libraries

// Throws the "built without CUDA" error; defined only in a build without nvcc, where every CUDA
// entry point (here and in model/kernels/cuda/) calls it.
[[noreturn]] void not_built();

} // namespace shardlab::cuda
