// One way to launch a kernel: `<<<grid, block, smem, stream>>>` under nvcc, the SIMT emulator's
// launch under -DSHARDLAB_CUDA=EMU — so every kernel source is the same for both. A bad launch
// configuration is reported at once, naming the kernel; faults inside the kernel surface at the
// next synchronisation of its stream, as on a GPU. Included by .cu files only.
#pragma once

#include "core/cuda/cuda_check.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

// Dynamic shared memory (`extern __shared__ T name[]`), 16-byte aligned.
#ifdef SHARDLAB_CUDA_EMU
#define SHARDLAB_DYNAMIC_SHARED(T, name)                                                           \
    T* name = static_cast<T*>(::shardlab::emu::dynamic_shared())
#else
#define SHARDLAB_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#endif

namespace shardlab::cuda {

// Blocks of `threads` covering n items.
inline unsigned blocks_for(std::size_t n, unsigned threads) {
    return unsigned((n + threads - 1) / threads);
}

template <typename... KArgs, typename... Args>
void launch(const char* name, void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem,
            cudaStream_t stream, Args&&... args) {
#ifdef SHARDLAB_CUDA_EMU
    emu::launch(name, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
#else
    kernel<<<grid, block, smem, stream>>>(KArgs(std::forward<Args>(args))...);
#endif
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) throw Error(std::string("launching kernel ") + name + ": " + describe(e));
}

// Dynamic shared memory a block gets without asking; more needs an opt-in per kernel.
constexpr std::size_t kDefaultDynamicShared = 48 * 1024;

// launch() with `smem` bytes of dynamic shared memory, opting the kernel in above the default.
template <typename... KArgs, typename... Args>
void launch_with_shared(const char* name, void (*kernel)(KArgs...), dim3 grid, dim3 block,
                        std::size_t smem, cudaStream_t stream, Args&&... args) {
    if (smem > kDefaultDynamicShared)
        check_cuda(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
                   name);
    launch(name, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

// The most dynamic shared memory the current device lets one block opt in to (227 KiB on an
// H100, 163 on an A100, 99 on an sm_86/89 GPU).
inline std::size_t shared_optin_bytes() {
    int device = 0, optin = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
               "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
    return std::size_t(optin);
}

} // namespace shardlab::cuda
