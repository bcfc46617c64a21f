// The WMMA API (nvcuda::wmma, CUDA's warp-level matrix multiply-accumulate) as the SIMT emulator
// provides it (test infrastructure: never in a real CUDA build): the m16n16k16 shape with
// __nv_bfloat16 or __half matrix_a / matrix_b fragments (row_major or col_major) and float
// accumulators — what shardlab's kernels use; any other shape or type fails to compile here.
//
// CUDA leaves a fragment's element layout unspecified (which lane holds which elements), so the
// emulator picks the simplest one: every lane holds the whole 16 x 16 matrix, row-major
// (x[r * cols + c] is element (r, c) whatever the fragment's layout parameter, which only says how
// load_matrix_sync reads memory). num_elements is therefore 256 and code that treats every element
// of a fragment alike (scaling an accumulator, filling it) is correct; code that assumes CUDA's
// real per-lane layout is not portable anyway. mma_sync computes each element in fp32 with the
// 16 products added in k order onto the accumulator's value — a fixed order, so results repeat;
// a 16-bit product is exact in fp32, so only the 16 additions round. Tensor cores add in another
// (unspecified, hardware-dependent) order and rounding: results agree to fp32 roundoff of the sum.
//
// Every *_sync function is warp-collective, as in CUDA: all 32 lanes must call it (it waits until
// all have arrived, and a lane that is missing or has exited is reported as for a shuffle). CUDA
// promises no memory ordering for them, so for the race detector the rendezvous orders nothing
// (emu::WarpOrder::nothing): a lane's write that another lane's load reads needs a __syncwarp or
// __syncthreads between them (tests/barrier_mutants.sh deletes each of the kernels'). After it,
// load_matrix_sync reads the whole tile in every lane (reads never race), store_matrix_sync writes
// only the lane's 32nd share of the elements (lane l those with index % 32 == l: disjoint, as on a
// GPU, so another lane reading them needs a __syncwarp or __syncthreads after the store), mma_sync
// touches only the lane's own fragments. fill_fragment is not a _sync function and is not a
// rendezvous. CUDA's preconditions are checked: the matrix pointer 256-bit (32-byte) aligned, ldm
// a multiple of 16 bytes (8 16-bit elements, 4 floats).
#pragma once

#include "emu/simt.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <source_location>
#include <string>
#include <type_traits>

// Under ThreadSanitizer (GCC says so with __SANITIZE_THREAD__, clang with __has_feature) the
// race detector models each lane as a thread of its own: the product memo below is emulator
// state, not kernel memory, so its accesses are hidden from it.
#if defined(__SANITIZE_THREAD__)
#define SHARDLAB_EMU_MMA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHARDLAB_EMU_MMA_TSAN 1
#endif
#endif
#if defined(SHARDLAB_EMU_MMA_TSAN)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif

namespace nvcuda::wmma {

// What a fragment is for, and how a matrix_a / matrix_b is laid out in memory.
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
// How an accumulator is laid out in memory (load_matrix_sync / store_matrix_sync).
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <typename T>
inline constexpr bool is_16bit = std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>;

inline float to_float(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
inline float to_float(__half v) {
    return __half2float(v);
}
inline float to_float(float v) {
    return v;
}

// The rows and columns of the matrix a fragment holds: A is M x K, B is K x N, C/D are M x N.
template <typename Use, int M, int N, int K>
struct shape;
template <int M, int N, int K>
struct shape<matrix_a, M, N, K> {
    static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct shape<matrix_b, M, N, K> {
    static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct shape<accumulator, M, N, K> {
    static constexpr int rows = M, cols = N;
};

// What the rendezvous of a *_sync function computes: nothing. A function of its own, so that
// lanes meeting a __syncwarp or a shuffle instead are reported.
inline void wmma_arrival(unsigned, const ::shardlab::emu::WarpWords&, ::shardlab::emu::WarpWords&) {
}
// The rendezvous every *_sync function starts with: all lanes, no memory ordered.
inline void arrive(std::source_location where) {
    ::shardlab::emu::warp_collective(0xffffffffu, nullptr, 0, nullptr, 0, wmma_arrival, where,
                                     ::shardlab::emu::WarpOrder::nothing);
}

// CUDA's preconditions on a matrix in memory.
template <typename T>
void check_matrix(const T* p, unsigned ldm, const char* what) {
    ::shardlab::emu::check_aligned(p, 32, what);
    if (ldm * sizeof(T) % 16 != 0)
        ::shardlab::emu::kernel_fault(std::string(what) + ": ldm " + std::to_string(ldm) +
                                      " is not a multiple of 16 bytes");
}
} // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
class fragment {
    static_assert(M == 16 && N == 16 && K == 16, "the emulator's WMMA has the m16n16k16 shape");
    static_assert(std::is_same_v<Use, accumulator>
                      ? std::is_same_v<T, float> && std::is_same_v<Layout, void>
                      : detail::is_16bit<T> && (std::is_same_v<Layout, row_major> ||
                                                std::is_same_v<Layout, col_major>),
                  "the emulator's WMMA has bf16/fp16 matrix_a/matrix_b fragments with a "
                  "row_major or col_major layout, and float accumulators");

  public:
    using element_type = T;
    using storage_element_type = T;
    static constexpr int rows = detail::shape<Use, M, N, K>::rows;
    static constexpr int cols = detail::shape<Use, M, N, K>::cols;
    enum { num_elements = rows * cols };
    T x[num_elements]; // element (r, c) at x[r * cols + c], in every lane
};

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& a, const T& v) {
    for (auto& e : a.x) e = v;
}

// A matrix_a or matrix_b fragment from memory laid out as its Layout says, rows ldm elements apart
// (row_major) or columns ldm apart (col_major).
template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& a, const T* mptr, unsigned ldm,
                      std::source_location where = std::source_location::current()) {
    static_assert(!std::is_same_v<Use, accumulator>, "an accumulator's load names its layout");
    using F = fragment<Use, M, N, K, T, Layout>;
    detail::arrive(where);
    detail::check_matrix(mptr, ldm, "wmma::load_matrix_sync");
    for (int r = 0; r < F::rows; ++r)
        for (int c = 0; c < F::cols; ++c)
            a.x[r * F::cols + c] = std::is_same_v<Layout, row_major>
                                       ? mptr[std::size_t(r) * ldm + c]
                                       : mptr[std::size_t(c) * ldm + r];
}

template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float>& a, const float* mptr, unsigned ldm,
                      layout_t layout,
                      std::source_location where = std::source_location::current()) {
    detail::arrive(where);
    detail::check_matrix(mptr, ldm, "wmma::load_matrix_sync");
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c)
            a.x[r * N + c] = layout == mem_row_major ? mptr[std::size_t(r) * ldm + c]
                                                     : mptr[std::size_t(c) * ldm + r];
}

// Writes this lane's share of the accumulator (see the file comment).
template <int M, int N, int K>
void store_matrix_sync(float* mptr, const fragment<accumulator, M, N, K, float>& a, unsigned ldm,
                       layout_t layout,
                       std::source_location where = std::source_location::current()) {
    detail::arrive(where);
    detail::check_matrix(mptr, ldm, "wmma::store_matrix_sync");
    for (int i = ::shardlab::emu::lane_id(); i < M * N; i += warpSize) {
        const int r = i / N, c = i % N;
        mptr[layout == mem_row_major ? std::size_t(r) * ldm + c : std::size_t(c) * ldm + r] =
            a.x[i];
    }
}

namespace detail {
// The last product computed on this OS thread, keyed by its inputs' bits. Every lane of a warp
// holds the same fragments (see the file comment), so the first lane computes and the other 31
// compare 2 KiB and copy: the emulated WMMA was a third of an AddressSanitizer training run.
// A pure function's memo cannot change a result.
template <typename T>
struct MmaMemo {
    bool valid = false;
    T a[256], b[256];
    float c[256], d[256];
};

// Hides the memo's accesses from ThreadSanitizer for its lifetime (no lane switch happens inside:
// the rendezvous is before it). Nothing elsewhere.
struct Unwatched {
#if defined(SHARDLAB_EMU_MMA_TSAN)
    Unwatched() {
        AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
        AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    }
    ~Unwatched() {
        AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
        AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
    }
#endif
};

template <typename T>
void multiply(const T* a, const T* b, const float* c, float* d) {
    // Each input converted once, not once per product (the emulator's 16-bit conversions are
    // software: converting inside the loop was most of a WMMA kernel's time). Same bits.
    float fa[256], fb[256];
    for (int i = 0; i < 256; ++i) fa[i] = to_float(a[i]);
    for (int i = 0; i < 256; ++i) fb[i] = to_float(b[i]);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            float s = c[i * 16 + j];
            for (int k = 0; k < 16; ++k) {
                const float product = fa[i * 16 + k] * fb[k * 16 + j];
                s += product; // the product is exact: no fused multiply-add changes the bits
            }
            d[i * 16 + j] = s;
        }
}
} // namespace detail

// d = a b + c, in fp32: each element c + a_0 b_0 + a_1 b_1 + ... + a_15 b_15 in that order.
// d may be c.
template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d,
              const fragment<matrix_a, M, N, K, T, LayoutA>& a,
              const fragment<matrix_b, M, N, K, T, LayoutB>& b,
              const fragment<accumulator, M, N, K, float>& c,
              std::source_location where = std::source_location::current()) {
    detail::arrive(where);
    [[maybe_unused]] detail::Unwatched unwatched;
    static thread_local detail::MmaMemo<T> memo;
    if (!memo.valid || std::memcmp(memo.a, a.x, sizeof memo.a) != 0 ||
        std::memcmp(memo.b, b.x, sizeof memo.b) != 0 ||
        std::memcmp(memo.c, c.x, sizeof memo.c) != 0) {
        std::memcpy(memo.a, a.x, sizeof memo.a);
        std::memcpy(memo.b, b.x, sizeof memo.b);
        std::memcpy(memo.c, c.x, sizeof memo.c);
        detail::multiply(memo.a, memo.b, memo.c, memo.d);
        memo.valid = true;
    }
    std::memcpy(d.x, memo.d, sizeof memo.d);
}

} // namespace nvcuda::wmma
