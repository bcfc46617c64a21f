// What the flash attention kernels share (flash_attention.cu on CUDA cores, flash_attention_mma.cu
// and flash_attention_wmma.cu on tensor cores): a launch with more dynamic shared memory than the
// default 48 KiB (opted in per kernel); for the tensor-core kernels, the choice of a kernel
// template by 16-bit storage type and register sizing, and the load of a 16-bit tile into shared
// memory. Included by .cu files only.
#pragma once

#include "core/cuda/cuda_check.h"
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/error.h"
#include "model/kernels/cuda/packed.h"

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

namespace shardlab::cuda {

constexpr std::size_t kFlashDefaultShared = 48 * 1024; // more needs an opt-in per kernel

// Launches `kernel` on `threads` threads a block with `smem` bytes of dynamic shared memory,
// opting in above the default.
template <typename... KArgs, typename... Args>
void launch_flash(const char* name, void (*kernel)(KArgs...), dim3 grid, unsigned threads,
                  std::size_t smem, cudaStream_t s, Args&&... args) {
    if (smem > kFlashDefaultShared)
        check_cuda(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
                   name);
    launch(name, kernel, grid, threads, smem, s, std::forward<Args>(args)...);
}

// Calls fn(TypeTag<T>{}, std::integral_constant<int, kMaxHd>{}) for the 16-bit storage type of t
// and the smallest register sizing (64 or 128) that holds hd; `what` names the kernels in a
// refusal.
template <typename Fn>
void dispatch_tensor_cores(DType t, int hd, const char* what, Fn&& fn) {
    check(t == DType::bf16 || t == DType::f16, std::string(what) + ": bf16 or fp16 only");
    check(hd % 16 == 0 && hd <= 128, std::string(what) + ": hd a multiple of 16, <= 128");
    auto sized = [&](auto tag) {
        if (hd <= 64) return fn(tag, std::integral_constant<int, 64>{});
        return fn(tag, std::integral_constant<int, 128>{});
    };
    if (t == DType::bf16) return sized(TypeTag<__nv_bfloat16>{});
    return sized(TypeTag<__half>{});
}

// Rows [r0, r0 + kRows) of a head's hd columns (hd a multiple of 8; row stride `stride` elements)
// into `tile` (row pitch `pitch`, 16-byte rows) as stored, 16 bytes at a time where the source
// allows; rows past T are zero. All kThreads threads of the block take part.
template <int kRows, int kThreads, typename T>
__device__ void load_tile16(T* tile, int pitch, const T* src, std::size_t stride, int r0, int T_,
                            int hd) {
    constexpr int W = Packed<T>::size;
    if (aligned16(src) && stride % W == 0) {
        const int chunks = hd / W;
        for (int i = int(threadIdx.x); i < kRows * chunks; i += kThreads) {
            const int r = i / chunks, c = (i % chunks) * W;
            Packed<T> v;
            if (r0 + r < T_) {
                v = load_packed(src + std::size_t(r0 + r) * stride + c);
            } else {
                for (T& e : v.v) e = from_f32<T>(0);
            }
            store_packed(tile + r * pitch + c, v);
        }
        return;
    }
    for (int i = int(threadIdx.x); i < kRows * hd; i += kThreads) {
        const int r = i / hd, c = i % hd;
        tile[r * pitch + c] = r0 + r < T_ ? src[std::size_t(r0 + r) * stride + c] : from_f32<T>(0);
    }
}

} // namespace shardlab::cuda
