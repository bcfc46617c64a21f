// What the flash attention kernels share (flash_attention.cu on CUDA cores, flash_attention_mma.cu
// and flash_attention_wmma.cu on tensor cores): for the tensor-core kernels, the choice of a kernel
// template by 16-bit storage type and register sizing, and the load of a 16-bit tile into shared
// memory, at once or by cp.async. Included by .cu files only.
#pragma once

#include "core/cuda/cuda_check.h"
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/cuda/unroll.h"
#include "core/error.h"
#include "model/kernels/cuda/cp_async.h"
#include "model/kernels/cuda/packed.h"

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

namespace shardlab::cuda {

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
// kRows x width tile of 16-bit elements, the block's kThreads threads sharing them out. kMaxHd: the
// largest width of the calling kernel's register sizing.
template <int kRows, int kThreads, int kMaxHd, typename F>
__device__ void for_my_chunks(int width, F chunk) {
    constexpr int W = 8, kChunks = kMaxHd / W, kStep = kThreads / kChunks;
    if (width == kMaxHd && kThreads % kChunks == 0 && kRows % kStep == 0) {
        // The kernel's largest width (GPT-2's head of 64, Llama's 128): a thread's chunk column is
        // fixed and its rows step evenly, a constant number of times, with no division.
        const int first = int(threadIdx.x) / kChunks, c = int(threadIdx.x) % kChunks * W;
        SHARDLAB_UNROLL
        for (int i = 0; i < kRows / kStep; ++i) chunk(first + i * kStep, c);
        return;
    }
    const int chunks = width / W;
    for (int i = int(threadIdx.x); i < kRows * chunks; i += kThreads)
        chunk(i / chunks, (i % chunks) * W);
}

// Rows [r0, r0 + kRows) of a head's columns (row stride `stride` elements) into the first `width`
// columns of `tile` (row pitch `pitch`, 16-byte rows) as stored, 16 bytes at a time where the
// source allows: the head's hd columns, then zeros up to width (hd <= width, both multiples of 8);
// rows past T are zeros. All kThreads threads of the block take part.
template <int kRows, int kThreads, int kMaxHd, typename T>
__device__ void load_tile16(T* tile, int pitch, const T* src, std::size_t stride, int r0, int T_,
                            int hd, int width) {
    static_assert(Packed<T>::size == 8, "16-bit elements: 8 to a 16-byte chunk");
    if (aligned16(src) && stride % 8 == 0) {
        for_my_chunks<kRows, kThreads, kMaxHd>(width, [&](int r, int c) {
            Packed<T> v;
            if (r0 + r < T_ && c < hd) {
                v = load_packed(src + std::size_t(r0 + r) * stride + c);
            } else {
                for (T& e : v.v) e = from_f32<T>(0);
            }
            store_packed(tile + r * pitch + c, v);
        });
        return;
    }
    for (int i = int(threadIdx.x); i < kRows * width; i += kThreads) {
        const int r = i / width, c = i % width;
        tile[r * pitch + c] =
            r0 + r < T_ && c < hd ? src[std::size_t(r0 + r) * stride + c] : from_f32<T>(0);
    }
}

// One thread's share of the copies of kRows x kWidth tiles of a head's rows into shared memory by
// cp.async, tile after tile (the tiles of one walk): as load_tile16 gives them (the head's hd
// columns, then zeros; rows past T zeros), complete for this thread after cp_async_commit() and
// the cp_async_wait() that covers the group, for the block after a __syncthreads() that follows.
// A thread's 16-byte column and rows within a tile are the same in every tile: a kernel makes the
// stream once, before its walk, and a tile's copies then cost a compare, a select and an add
// each. A source off the 16-byte grid is copied by load_tile16, at once.
template <int kRows, int kThreads, int kWidth, typename T>
struct TileStream {
    static constexpr int kChunks = kWidth / 8, kStep = kThreads / kChunks;
    static_assert(kThreads % kChunks == 0 && kRows % kStep == 0, "chunks spread evenly");
    const T* src;       // the head's row 0 (real: what a copy of no bytes names)
    std::size_t stride; // elements from one row to the next
    int T_, hd;
    bool async; // 16-byte copies allowed

    __device__ TileStream(const T* src_, std::size_t stride_, int seq, int hd_)
        : src(src_), stride(stride_), T_(seq), hd(hd_), async(aligned16(src_) && stride_ % 8 == 0) {
    }

    // Starts the copies of rows [r0, r0 + kRows) into `tile` (row pitch `pitch`).
    __device__ void load(T* tile, int pitch, int r0) const {
        if (!async)
            return load_tile16<kRows, kThreads, kWidth>(tile, pitch, src, stride, r0, T_, hd,
                                                        kWidth);
        const int row = int(threadIdx.x) / kChunks, col = int(threadIdx.x) % kChunks * 8;
        // An offset, not a pointer, steps past T: only a real row's address is ever formed.
        std::size_t at = std::size_t(r0 + row) * stride + std::size_t(col);
        const std::size_t step = kStep * stride;
        SHARDLAB_UNROLL
        for (int i = 0; i < kRows / kStep; ++i, at += step) {
            const int r = row + i * kStep;
            const bool valid = r0 + r < T_ && col < hd; // else zeros, from row 0 for no bytes
            cp_async<16>(tile + r * pitch + col, valid ? src + at : src, valid);
        }
    }
};

} // namespace shardlab::cuda
