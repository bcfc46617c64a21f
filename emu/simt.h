// The SIMT emulator's kernel language (test infrastructure: never in a real CUDA build). A grid's
// blocks run on a pool of OS threads; inside a block every CUDA thread is a fiber (Boost.Context),
// and the block's fibers take turns on one OS thread until each reaches a barrier, a warp
// operation or its end. So `__shared__` can be a `static thread_local` (one copy per OS thread =
// per block, since a block never leaves its thread), barriers and shuffles are real rendezvous,
// and atomics are real atomics across blocks. What CUDA leaves undefined is reported instead:
// a barrier some threads reach and others skip or exit before, shuffles with a lane missing, and
// deadlocks — each with the kernel, block and thread ids and the source line.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

// --- the language's types and qualifiers -------------------------------------------------------

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
    unsigned x = 0, y = 0, z = 0;
};

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local
inline constexpr int warpSize = 32;

namespace shardlab::emu {

// What one CUDA thread knows about itself; the scheduler points `current` at the running fiber's.
struct ThreadCtx {
    uint3 thread_idx, block_idx;
    dim3 block_dim, grid_dim;
    unsigned linear = 0; // x + y * bx + z * bx * by
    // cp.async copies this thread issued and has not waited for (model/kernels/cuda/cp_async.h),
    // in issue order, and the end of each committed group among them.
    struct AsyncCopy {
        void* dst;
        const void* src; // nullptr: zero-fill
        std::size_t bytes;
    };
    std::vector<AsyncCopy> async_copies;
    std::vector<std::size_t> async_groups;
};
ThreadCtx& thread_ctx();

void syncthreads(std::source_location where);
void syncwarp(unsigned mask, std::source_location where);
// Every lane of `mask` deposits `value` and receives what lane `src` deposited (the primitive
// under all shuffles and votes). Lanes outside the mask, or that exited, are an error.
std::uint64_t warp_exchange(unsigned mask, std::uint64_t value, int src,
                            std::source_location where);
unsigned warp_ballot(unsigned mask, bool predicate, std::source_location where);
// A warp operation whose result for each lane depends on what other lanes hold (shuffles, votes,
// PTX's mma.sync and ldmatrix): every lane of `mask` deposits `in_words` 32-bit values (at most
// kCollectiveWords) and waits for the others; then `compute`, given every lane's deposit (lane l's
// at in[l]), fills every lane's result (out[l], lanes of the mask only), once for the group, run
// by whichever of its lanes resumes first; each lane receives its own `out_words`. One rendezvous
// a call. `compute` must be a plain function of its arguments: no device functions (threadIdx,
// shuffles, barriers) inside it. Lanes that meet with different `compute`s are reported
// (__syncwarp is this with nothing to compute: a null `compute`). `order` says what the operation
// orders for the race detector (WarpOrder).
inline constexpr int kCollectiveWords = 16;
using WarpWords = std::uint32_t[32][kCollectiveWords];
using WarpCompute = void (*)(unsigned mask, const WarpWords& in, WarpWords& out);
// What a warp operation orders among its lanes' memory accesses, as CUDA orders them: __syncwarp
// "guarantees memory ordering among threads participating in the barrier" (`lanes`); shuffles,
// votes and mma.sync exchange registers and order no memory (`nothing`: a lane's shared write read
// by another lane after a shuffle alone is a race, as compute-sanitizer's racecheck says too);
// ldmatrix's shared-memory reads, made by one lane for the warp, happen before every lane goes on
// (`reads`), as the instruction's end orders them on a GPU. A `compute` run for `nothing` must not
// touch memory the race detector sees (its writes to `out` would race with the next compute's).
enum class WarpOrder { nothing, lanes, reads };
void warp_collective(unsigned mask, const std::uint32_t* in, int in_words, std::uint32_t* out,
                     int out_words, WarpCompute compute, std::source_location where,
                     WarpOrder order);
int lane_id();
void* dynamic_shared(); // this block's dynamic shared memory (the launch's `smem` bytes)
// Reports a misaligned vector access (CUDA's cudaErrorMisalignedAddress) instead of doing it.
void check_aligned(const void* p, std::size_t alignment, const char* what);
// Reports what CUDA leaves undefined and the running thread just did (a broken precondition of a
// device function), naming its kernel, block and thread.
[[noreturn]] void kernel_fault(const std::string& what);

// Runs one grid on the pool: body() once per CUDA thread. Throws KernelError on a barrier or
// warp-operation fault; validates nothing (launch() does).
struct KernelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
void run_grid(const char* kernel, dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
              const std::function<void()>& body);

template <typename T>
std::uint64_t to_bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <typename T>
T from_bits(std::uint64_t b) {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}

} // namespace shardlab::emu

#define threadIdx (::shardlab::emu::thread_ctx().thread_idx)
#define blockIdx (::shardlab::emu::thread_ctx().block_idx)
#define blockDim (::shardlab::emu::thread_ctx().block_dim)
#define gridDim (::shardlab::emu::thread_ctx().grid_dim)
#define __syncthreads() ::shardlab::emu::syncthreads(std::source_location::current())

inline void __syncwarp(unsigned mask = 0xffffffffu,
                       std::source_location where = std::source_location::current()) {
    ::shardlab::emu::syncwarp(mask, where);
}

// --- warp shuffles and votes (width: lanes form groups of `width`, as in CUDA) -------------------

template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32,
              std::source_location where = std::source_location::current()) {
    const int lane = ::shardlab::emu::lane_id();
    const int base = lane - lane % width;
    const int from = base + ((src % width) + width) % width;
    return ::shardlab::emu::from_bits<T>(
        ::shardlab::emu::warp_exchange(mask, ::shardlab::emu::to_bits(v), from, where));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,
                 std::source_location where = std::source_location::current()) {
    const int lane = ::shardlab::emu::lane_id();
    const int in_group = lane % width;
    const int from = in_group >= int(delta) ? lane - int(delta) : lane;
    return ::shardlab::emu::from_bits<T>(
        ::shardlab::emu::warp_exchange(mask, ::shardlab::emu::to_bits(v), from, where));
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,
                   std::source_location where = std::source_location::current()) {
    const int lane = ::shardlab::emu::lane_id();
    const int in_group = lane % width;
    const int from = in_group + int(delta) < width ? lane + int(delta) : lane;
    return ::shardlab::emu::from_bits<T>(
        ::shardlab::emu::warp_exchange(mask, ::shardlab::emu::to_bits(v), from, where));
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,
                  std::source_location where = std::source_location::current()) {
    const int lane = ::shardlab::emu::lane_id();
    const int from = (lane ^ lane_mask) < (lane - lane % width) + width ? lane ^ lane_mask : lane;
    return ::shardlab::emu::from_bits<T>(
        ::shardlab::emu::warp_exchange(mask, ::shardlab::emu::to_bits(v), from, where));
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location where = std::source_location::current()) {
    return ::shardlab::emu::warp_ballot(mask, predicate != 0, where);
}
inline int __any_sync(unsigned mask, int predicate,
                      std::source_location where = std::source_location::current()) {
    return (::shardlab::emu::warp_ballot(mask, predicate != 0, where) & mask) != 0;
}
inline int __all_sync(unsigned mask, int predicate,
                      std::source_location where = std::source_location::current()) {
    return (::shardlab::emu::warp_ballot(mask, predicate != 0, where) & mask) == mask;
}
inline unsigned __activemask() {
    return 0xffffffffu;
}

// --- atomics: real atomics, since blocks run at once on several OS threads
// -------------------------

template <typename T>
T atomicAdd(T* p, T v) {
    return std::atomic_ref<T>(*p).fetch_add(v);
}
template <typename T>
T atomicSub(T* p, T v) {
    return std::atomic_ref<T>(*p).fetch_sub(v);
}
template <typename T>
T atomicExch(T* p, T v) {
    return std::atomic_ref<T>(*p).exchange(v);
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
    std::atomic_ref<T>(*p).compare_exchange_strong(compare, v);
    return compare; // the old value, whether or not it was swapped
}
template <typename T>
T atomicMax(T* p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (old < v && !a.compare_exchange_weak(old, v)) {
    }
    return old;
}
template <typename T>
T atomicMin(T* p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {
    }
    return old;
}
inline void __threadfence() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
