// PTX's cp.async (sm_80+): a copy from global to shared memory that the issuing thread does not
// wait for, so a block can fetch its next tile while it computes on this one. Copies are committed
// in groups; cp_async_wait<N>() returns once all but the newest N committed groups have landed —
// for this thread's copies only: a __syncthreads() after it makes them visible to the block.
// A copy of a row past the data (valid = false) writes zeros instead of reading (src-size 0).
//
// The emulator gives a copy both of its possible extremes, so that a kernel that relies on either
// fails: at issue it fills the destination with 0xFF bytes (a NaN in bf16, fp16 and fp32) — a
// read before the wait sees them, and the race detector sees a write that a barrier must separate
// from the buffer's previous readers — and at the wait it writes the data. A thread that ends with
// copies it never waited for is reported.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>

namespace shardlab::cuda {

// Copies kBytes (4, 8 or 16; dst and src aligned to them) from src to shared dst, or zeros there.
template <int kBytes>
__device__ __forceinline__ void cp_async(void* dst, const void* src, bool valid) {
    static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
#ifdef SHARDLAB_CUDA_EMU
    emu::check_aligned(dst, kBytes, "cp.async's shared address");
    emu::check_aligned(src, kBytes, "cp.async's global address");
    std::memset(dst, 0xFF, kBytes);
    emu::thread_ctx().async_copies.push_back({dst, valid ? src : nullptr, kBytes});
#else
    const unsigned to = unsigned(__cvta_generic_to_shared(dst));
    const int src_bytes = valid ? kBytes : 0;
    // 16 bytes bypass L1 (.cg: the tile is read once, from shared memory); .cg takes 16 only.
    if constexpr (kBytes == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(src),
                     "r"(src_bytes)
                     : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(to), "l"(src),
                     "n"(kBytes), "r"(src_bytes)
                     : "memory");
#endif
}

// Closes the group of this thread's copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
#ifdef SHARDLAB_CUDA_EMU
    auto& me = emu::thread_ctx();
    me.async_groups.push_back(me.async_copies.size());
#else
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most the newest N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#ifdef SHARDLAB_CUDA_EMU
    auto& me = emu::thread_ctx();
    if (me.async_groups.size() <= std::size_t(N)) return;
    const std::size_t landed = me.async_groups[me.async_groups.size() - 1 - N];
    for (std::size_t i = 0; i < landed; ++i) {
        const auto& c = me.async_copies[i];
        if (c.src)
            std::memcpy(c.dst, c.src, c.bytes);
        else
            std::memset(c.dst, 0, c.bytes);
    }
    me.async_copies.erase(me.async_copies.begin(), me.async_copies.begin() + landed);
    me.async_groups.erase(me.async_groups.begin(), me.async_groups.end() - N);
    for (std::size_t& end : me.async_groups) end -= landed;
#else
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

} // namespace shardlab::cuda
