// One warp-wide tensor-core product, PTX's mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.f32:
// D (16 x 8, fp32) = A (16 x 16, 16-bit) B (16 x 8, 16-bit) + D, on sm_80 and later. Unlike WMMA's
// fragments, PTX specifies which lane holds which elements, so a kernel can work on a product's
// rows in registers (flash attention's softmax) and can turn two neighbouring accumulators into an
// A operand without going through memory. With g = lane / 4 and t = lane % 4, a lane holds
//   A: a[0] = (g, 2t..2t+1), a[1] = (g+8, 2t..2t+1), a[2] = (g, 2t+8..2t+9), a[3] = (g+8,
//   2t+8..2t+9)
//      (two 16-bit elements per register, the lower column in the low half);
//   B: b[0] = rows 2t, 2t+1 of column g, b[1] = rows 2t+8, 2t+9 (the lower row in the low half);
//   D: d[0], d[1] = (g, 2t), (g, 2t+1); d[2], d[3] = (g+8, 2t), (g+8, 2t+1).
// On a GPU the function is the instruction. The emulator has no PTX: there it computes the
// definition — once every lane has handed its registers over (emu::warp_collective), each lane's
// four elements are formed as d + sum over k = 0..15 in order, in fp32 (a product of 16-bit values
// is exact in fp32, so only the additions round; tensor cores add in their own order: the same to
// fp32 roundoff of the sum). Included by .cu files only.
#pragma once

#include "core/cuda/element.h"

#include <cuda_runtime.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace shardlab::cuda {

struct MmaA {
    std::uint32_t r[4];
};
struct MmaB {
    std::uint32_t r[2];
};
struct MmaD {
    float x[4];
};

// Two 16-bit values in one register, `lo` in the low half.
template <typename T>
__device__ __forceinline__ std::uint32_t pack2(T lo, T hi) {
    static_assert(sizeof(T) == 2, "16-bit elements");
    std::uint16_t a, b;
    memcpy(&a, &lo, 2);
    memcpy(&b, &hi, 2);
    return std::uint32_t(a) | std::uint32_t(b) << 16;
}
// Two fp32 values rounded to T (to nearest even) and packed.
template <typename T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
    return pack2<T>(from_f32<T>(lo), from_f32<T>(hi));
}
// Two adjacent 16-bit elements of (shared) memory, p 4-byte aligned, as one 32-bit load.
__device__ __forceinline__ std::uint32_t load2(const void* p) {
    return *static_cast<const std::uint32_t*>(p);
}

// The A operand from two accumulators of the same 16 rows: `lo` columns 0..7, `hi` 8..15 of a
// 16 x 16 block, rounded to T. The layouts line up (see the file comment): no data moves.
template <typename T>
__device__ __forceinline__ MmaA a_from(const MmaD& lo, const MmaD& hi) {
    return {{pack2<T>(lo.x[0], lo.x[1]), pack2<T>(lo.x[2], lo.x[3]), pack2<T>(hi.x[0], hi.x[1]),
             pack2<T>(hi.x[2], hi.x[3])}};
}

// The A operand from a row-major 16 x 16 block of memory, rows `pitch` elements apart.
template <typename T>
__device__ __forceinline__ MmaA load_a(const T* p, int pitch) {
    const int g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    const T* lo = p + g * pitch + 2 * t;
    const T* hi = lo + 8 * pitch;
    return {{load2(lo), load2(hi), load2(lo + 8), load2(hi + 8)}};
}

// The B operand (16 x 8) from memory holding its transpose row-major: row n of `p` is column n of
// B, its 16 elements contiguous (the K tile for S = Q K^T).
template <typename T>
__device__ __forceinline__ MmaB load_b_rows(const T* p, int pitch) {
    const int g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    const T* col = p + g * pitch + 2 * t;
    return {{load2(col), load2(col + 8)}};
}

// The B operand (16 x 8) from memory holding it row-major, rows `pitch` apart (the V tile for
// O += P V): a register's two elements are in two rows, so two 16-bit loads each.
template <typename T>
__device__ __forceinline__ MmaB load_b_cols(const T* p, int pitch) {
    const int g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    const T* top = p + 2 * t * pitch + g;
    return {{pack2<T>(top[0], top[pitch]), pack2<T>(top[8 * pitch], top[9 * pitch])}};
}

#ifdef SHARDLAB_CUDA_EMU
// The emulator has no PTX: the two warp-wide instructions as functions of every lane's registers
// (emu::warp_collective), computed once for the warp.
namespace emulated {
template <typename T>
inline float half_of(std::uint32_t word, int high) {
    const std::uint16_t bits = std::uint16_t(high ? word >> 16 : word & 0xffffu);
    T v;
    memcpy(&v, &bits, 2);
    return to_f32(v);
}

// ldmatrix_x4: lane l deposited the address of row l % 8 of matrix l / 8 (two words); lane (g, t)
// receives in r[i] matrix i's (g, 2t..2t+1), or with kTrans its (2t..2t+1, g).
template <bool kTrans>
void ldmatrix_x4(unsigned, const emu::WarpWords& in, emu::WarpWords& out) {
    auto row_of = [&](int lane) {
        const std::uint64_t bits = in[lane][0] | std::uint64_t(in[lane][1]) << 32;
        return reinterpret_cast<const std::uint16_t*>(std::uintptr_t(bits));
    };
    for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        for (int i = 0; i < 4; ++i)
            out[lane][i] = kTrans ? std::uint32_t(row_of(8 * i + 2 * t)[g]) |
                                        std::uint32_t(row_of(8 * i + 2 * t + 1)[g]) << 16
                                  : std::uint32_t(row_of(8 * i + g)[2 * t]) |
                                        std::uint32_t(row_of(8 * i + g)[2 * t + 1]) << 16;
    }
}

// mma: lane l deposited its A elements a[0..3] (words 0-7, widened to fp32 in register order),
// its B elements b[0..1] (8-11) and its accumulators d[0..3] (12-15), all as fp32 bits. Each lane's
// d[i] = (row, col) becomes d + sum over k = 0..15 in order, in fp32: the 128 sums advance
// together, a k at a time, so that the compiler can vectorise across them (the same additions in
// the same order per element as one sum after another). It touches only its arguments and its own
// arrays, at fixed bounds, so the sanitizers are off in it: nothing for the race detector
// (WarpOrder::nothing; instrumented, its writes to `out` would race with the next compute's) nor
// for AddressSanitizer to find (instrumented, this form made the mma_wide bitwise test 1.4x
// slower; without, mma went from 19% of the flash tests' time to 5%). T, though unused, keeps the
// bf16 and fp16 instructions apart: lanes meeting in different ones are reported.
template <typename T>
__attribute__((no_sanitize("address", "undefined", "thread"))) void
mma(unsigned, const emu::WarpWords& in, emu::WarpWords& out) {
    float A[16][16], B[16][8], D[16][8]; // A by rows, B by rows of k, D by rows
    for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        float w[16]; // no helper calls: one would carry the sanitizers back in
        std::memcpy(w, in[lane], sizeof w);
        for (int h = 0; h < 2; ++h) {
            A[g][2 * t + h] = w[h];
            A[g + 8][2 * t + h] = w[2 + h];
            A[g][2 * t + 8 + h] = w[4 + h];
            A[g + 8][2 * t + 8 + h] = w[6 + h];
            B[2 * t + h][g] = w[8 + h];
            B[2 * t + 8 + h][g] = w[10 + h];
            D[g][2 * t + h] = w[12 + h];
            D[g + 8][2 * t + h] = w[14 + h];
        }
    }
    for (int k = 0; k < 16; ++k)
        for (int r = 0; r < 16; ++r)
            for (int c = 0; c < 8; ++c) D[r][c] += A[r][k] * B[k][c];
    for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        const float d[4] = {D[g][2 * t], D[g][2 * t + 1], D[g + 8][2 * t], D[g + 8][2 * t + 1]};
        std::memcpy(out[lane], d, sizeof d);
    }
}

} // namespace emulated
#endif

// PTX's ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: four 8 x 8 matrices of 16-bit elements
// from shared memory in one warp-wide load. Lane l gives the address of row l % 8 of matrix l / 8
// (8 contiguous elements, 16-byte aligned) and receives, in r[i], matrix i's elements
// (l / 4, 2(l % 4)) and (l / 4, 2(l % 4) + 1) — or with `trans` the transpose's: (2(l % 4), l / 4)
// and (2(l % 4) + 1, l / 4) — the lower in the low half. That is the mma operands' layout, so one
// ldmatrix gives an A operand or two B operands: the loaders below do what load_a, load_b_rows
// and load_b_cols do (the tests hold them to the same registers) in 1 instruction instead of 4,
// 4 and 8. Under the emulator the rows the warp's lanes name are read for every lane at once
// (emu::warp_collective), as the instruction would deliver them.
template <bool kTrans>
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* row) {
#ifdef SHARDLAB_CUDA_EMU
    emu::check_aligned(row, 16, "ldmatrix's row address");
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(row);
    const std::uint32_t mine[2] = {std::uint32_t(a), std::uint32_t(std::uint64_t(a) >> 32)};
    emu::warp_collective(0xffffffffu, mine, 2, r, 4, emulated::ldmatrix_x4<kTrans>,
                         std::source_location::current(), emu::WarpOrder::reads);
#else
    const unsigned address = unsigned(__cvta_generic_to_shared(row));
    if constexpr (kTrans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(address)
                     : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(address)
                     : "memory");
#endif
}

// As load_a, from shared memory by ldmatrix: matrices (rows 0-7 | 8-15) x (columns 0-7 | 8-15).
template <typename T>
__device__ __forceinline__ MmaA ldmatrix_a(const T* p, int pitch) {
    const int l = int(threadIdx.x % 32), i = l / 8;
    MmaA a;
    ldmatrix_x4<false>(a.r, p + (l % 8 + 8 * (i % 2)) * pitch + 8 * (i / 2));
    return a;
}

// As load_b_rows for two neighbouring 8-column blocks of B: b[0] from rows 0-7 of `p`, b[1] from
// rows 8-15.
template <typename T>
__device__ __forceinline__ void ldmatrix_b_rows(MmaB (&b)[2], const T* p, int pitch) {
    const int l = int(threadIdx.x % 32), i = l / 8;
    std::uint32_t r[4];
    ldmatrix_x4<false>(r, p + (l % 8 + 8 * (i / 2)) * pitch + 8 * (i % 2));
    b[0] = {{r[0], r[1]}};
    b[1] = {{r[2], r[3]}};
}

// As load_b_cols for two neighbouring 8-column blocks of B: b[0] from columns 0-7 of `p`, b[1]
// from columns 8-15.
template <typename T>
__device__ __forceinline__ void ldmatrix_b_cols(MmaB (&b)[2], const T* p, int pitch) {
    const int l = int(threadIdx.x % 32), i = l / 8;
    std::uint32_t r[4];
    ldmatrix_x4<true>(r, p + (l % 8 + 8 * (i % 2)) * pitch + 8 * (i / 2));
    b[0] = {{r[0], r[1]}};
    b[1] = {{r[2], r[3]}};
}

// d += a b on the tensor cores (T: __nv_bfloat16 or __half). Warp-collective: all 32 lanes call it.
template <typename T>
__device__ __forceinline__ void mma(MmaD& d, const MmaA& a, const MmaB& b) {
    static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>,
                  "mma.m16n8k16 takes bf16 or fp16");
#ifdef SHARDLAB_CUDA_EMU
    // Each lane widens its own elements (each of A's and B's is held by one lane: 384 a warp, as
    // the instruction reads them) and hands them over with its accumulators.
    std::uint32_t mine[16];
    for (int h = 0; h < 2; ++h) {
        for (int i = 0; i < 4; ++i)
            mine[2 * i + h] = std::bit_cast<std::uint32_t>(emulated::half_of<T>(a.r[i], h));
        for (int i = 0; i < 2; ++i)
            mine[8 + 2 * i + h] = std::bit_cast<std::uint32_t>(emulated::half_of<T>(b.r[i], h));
    }
    memcpy(mine + 12, d.x, 16);
    std::uint32_t got[4];
    emu::warp_collective(0xffffffffu, mine, 16, got, 4, emulated::mma<T>,
                         std::source_location::current(), emu::WarpOrder::nothing);
    memcpy(d.x, got, 16);
#else
    // Not volatile: the instruction has no effect beyond its outputs, so nvcc may schedule it.
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
            : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
            : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]));
#endif
}

} // namespace shardlab::cuda
