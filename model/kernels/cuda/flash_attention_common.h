// What the flash attention kernels share (flash_attention.cu on CUDA cores, flash_attention_mma.cu
// and flash_attention_wmma.cu on tensor cores): a launch with more dynamic shared memory than the
// default 48 KiB (opted in per kernel); for the tensor-core kernels, the choice of a kernel
// template by 16-bit storage type and register sizing, and the load of a 16-bit tile into shared
// memory, at once or by cp.async. Included by .cu files only.
#pragma once

#include "core/cuda/cuda_check.h"
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/error.h"
#include "model/kernels/cuda/cp_async.h"
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

// Calls chunk(r, c) for each of this thread's 16-byte chunks (row r, first column c) of a
// kRows x hd tile of 16-bit elements, the block's kThreads threads sharing them out. kMaxHd: the
// largest head dim of the calling kernel's register sizing.
template <int kRows, int kThreads, int kMaxHd, typename F>
__device__ void for_my_chunks(int hd, F chunk) {
    constexpr int W = 8, kChunks = kMaxHd / W;
    if (hd == kMaxHd && kThreads % kChunks == 0) {
        // The kernel's largest head dim (GPT-2's 64, Llama's 128): a thread's chunk column is
        // fixed and its rows step evenly, with no division at run time.
        for (int r = int(threadIdx.x) / kChunks; r < kRows; r += kThreads / kChunks)
            chunk(r, int(threadIdx.x) % kChunks * W);
        return;
    }
    const int chunks = hd / W;
    for (int i = int(threadIdx.x); i < kRows * chunks; i += kThreads)
        chunk(i / chunks, (i % chunks) * W);
}

// Rows [r0, r0 + kRows) of a head's hd columns (hd a multiple of 8; row stride `stride` elements)
// into `tile` (row pitch `pitch`, 16-byte rows) as stored, 16 bytes at a time where the source
// allows; rows past T are zero. All kThreads threads of the block take part.
template <int kRows, int kThreads, int kMaxHd, typename T>
__device__ void load_tile16(T* tile, int pitch, const T* src, std::size_t stride, int r0, int T_,
                            int hd) {
    static_assert(Packed<T>::size == 8, "16-bit elements: 8 to a 16-byte chunk");
    if (aligned16(src) && stride % 8 == 0) {
        for_my_chunks<kRows, kThreads, kMaxHd>(hd, [&](int r, int c) {
            Packed<T> v;
            if (r0 + r < T_) {
                v = load_packed(src + std::size_t(r0 + r) * stride + c);
            } else {
                for (T& e : v.v) e = from_f32<T>(0);
            }
            store_packed(tile + r * pitch + c, v);
        });
        return;
    }
    for (int i = int(threadIdx.x); i < kRows * hd; i += kThreads) {
        const int r = i / hd, c = i % hd;
        tile[r * pitch + c] = r0 + r < T_ ? src[std::size_t(r0 + r) * stride + c] : from_f32<T>(0);
    }
}

// load_tile16 by cp.async where the source allows 16-byte copies (else as load_tile16 does, at
// once): the tile is complete for this thread after cp_async_commit() and the cp_async_wait()
// that covers the group, for the block after a __syncthreads() that follows.
template <int kRows, int kThreads, int kMaxHd, typename T>
__device__ void load_tile16_async(T* tile, int pitch, const T* src, std::size_t stride, int r0,
                                  int T_, int hd) {
    if (aligned16(src) && stride % 8 == 0) {
        for_my_chunks<kRows, kThreads, kMaxHd>(hd, [&](int r, int c) {
            const bool valid = r0 + r < T_; // else zeros, read from row r0 (real) for no bytes
            cp_async<16>(tile + r * pitch + c, src + std::size_t(valid ? r0 + r : r0) * stride + c,
                         valid);
        });
        return;
    }
    load_tile16<kRows, kThreads, kMaxHd>(tile, pitch, src, stride, r0, T_, hd);
}

} // namespace shardlab::cuda
