// Flash attention's register-softmax tensor-core kernels: the design is explained in
// flash_attention_mma.h. Within a warp, lane l (g = l / 4, t = l % 4) holds, of the warp's 16 rows,
// rows g and g + 8, and of every 8-column block of a score tile its columns 2t and 2t + 1 — the
// accumulator layout of mma_m16n8k16.h — so a row's reductions run over the 4 lanes of g (two
// butterfly shuffles, the same bits in each lane: a + b = b + a). Each kernel is a template on the
// largest head dim it serves (64 or 128), which sizes its accumulator arrays; loops over them are
// unrolled so that the arrays are indexed by constants (registers, not local memory).
#include "model/kernels/cuda/fast_exp2.h"
#include "model/kernels/cuda/flash_attention_common.h"
#include "model/kernels/cuda/flash_attention_mma.h"
#include "model/kernels/cuda/mma_m16n8k16.h"
#include "model/kernels/cuda/qkv_layout.h"

#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/cuda/unroll.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace shardlab::cuda {

namespace {
constexpr int kTile = kFlashMmaTile;  // rows of a block's query or key tile
constexpr int kWarps = 4;             // each owns kRows rows of the tile
constexpr int kRows = 16;             // mma's m
constexpr int kThreads = kWarps * 32; // 128
constexpr int kCols = kTile / 8;      // 8-column accumulators across a score tile: 8
constexpr int kPass = 4;              // backward's accumulators per pass: 32 columns

__host__ __device__ inline int tiles(int T) {
    return (T + kTile - 1) / kTile;
}
// A 16-bit tile row: hd + 8 elements, a 16-byte multiple (ldmatrix reads 16-byte rows) that puts
// consecutive rows 4 banks apart, so the 8 rows of one ldmatrix phase hit 32 distinct banks (hd a
// multiple of 16).
__host__ __device__ inline int tile_pitch(int hd) {
    return hd + 8;
}

template <typename E>
__device__ E* carve(unsigned char*& at, std::size_t n) {
    E* r = reinterpret_cast<E*>(at);
    at += n * sizeof(E);
    return r;
}

// The buffers of n elements that the tiles of a walk land in, side by side: with two stages, tile
// j's is j % 2 (the next tile lands while this one is used), with one, the only one. b[j] is
// arithmetic on one pointer: an array of pointers indexed at run time would live in local memory
// (ptxas gave the kernels stack frames for it).
template <typename E, int kStages>
struct Stages {
    E* base;
    std::size_t n;
    __device__ E* operator[](int j) const { return base + (kStages == 2 ? j % 2 : 0) * n; }
};
template <typename E, int kStages>
__device__ Stages<E, kStages> carve_stages(unsigned char*& at, std::size_t n) {
    return {carve<E>(at, kStages * n), n};
}

// Rows [r0, r0 + kTile) of a head's hd columns into `tile` by cp.async (flash_attention_common.h):
// there for this thread once the copies' group is waited for.
template <int kMaxHd, typename T>
__device__ void load_tile(T* tile, const T* src, std::size_t stride, int r0, int T_, int hd) {
    load_tile16_async<kTile, kThreads, kMaxHd>(tile, tile_pitch(hd), src, stride, r0, T_, hd);
}

// s[n] += A_w B^T for the 8-column blocks n in [first, last) (both even): A_w the warp's 16 rows,
// its operand for hd's columns [16 k, 16 k + 16) given by a_of(k); B the rows of tile `b` from its
// row 0 (8 per block), by ldmatrix (mma_m16n8k16.h), a B pair per instruction.
template <int kMaxHd, int N, typename T, typename AOf>
__device__ void scores_of(MmaD (&s)[N], AOf a_of, const T* b, int pitch, int hd, int first,
                          int last) {
    SHARDLAB_UNROLL
    for (int k = 0; k < kMaxHd / 16; ++k) {
        if (k * 16 >= hd) break;
        const MmaA fa = a_of(k);
        SHARDLAB_UNROLL
        for (int n = 0; n < N; n += 2) { // first and last are even: B operands load in pairs
            if (n < first || n >= last) continue;
            MmaB fb[2];
            ldmatrix_b_rows(fb, b + n * 8 * pitch + k * 16, pitch);
            mma<T>(s[n], fa, fb[0]);
            mma<T>(s[n + 1], fa, fb[1]);
        }
    }
}

// scores_of with A_w the warp's rows at `a` in a shared tile, each operand loaded when it is used.
template <int kMaxHd, int N, typename T>
__device__ void scores(MmaD (&s)[N], const T* a, const T* b, int pitch, int hd, int first,
                       int last) {
    scores_of<kMaxHd>(
        s, [&](int k) { return ldmatrix_a(a + k * 16, pitch); }, b, pitch, hd, first, last);
}

// The warp's rows of a tile, as scores() takes them: with kRegs, their A operands for all of hd
// loaded once into registers (rows used against every tile of the walk); else read from the shared
// tile at every use. Loaded after the barrier that completes the tile.
template <bool kRegs, int kMaxHd, typename T>
struct WarpRows;
template <int kMaxHd, typename T>
struct WarpRows<false, kMaxHd, T> {
    const T* rows = nullptr;
    __device__ void load(const T* a, int, int) { rows = a; }
    __device__ const T* operands() const { return rows; }
};
template <int kMaxHd, typename T>
struct WarpRows<true, kMaxHd, T> {
    MmaA fa[kMaxHd / 16] = {};
    __device__ void load(const T* a, int pitch, int hd) {
        SHARDLAB_UNROLL
        for (int k = 0; k < kMaxHd / 16; ++k)
            if (k * 16 < hd) fa[k] = ldmatrix_a(a + k * 16, pitch);
    }
    __device__ const WarpRows& operands() const { return *this; }
};

// scores_of with A_w from registers.
template <int kMaxHd, int N, typename T>
__device__ void scores(MmaD (&s)[N], const WarpRows<true, kMaxHd, T>& a, const T* b, int pitch,
                       int hd, int first, int last) {
    scores_of<kMaxHd>(
        s, [&](int k) { return a.fa[k]; }, b, pitch, hd, first, last);
}

// acc[n] += P V over hd's 8-column blocks n: P the warp's 16 x 8N probabilities as accumulators
// p[0 .. N) (rounded to T here), V the rows of tile `v` from its row 0; only P's 16-column blocks
// [first, last), the others being zero (masked).
template <int kMaxHd, int N, typename T>
__device__ void product(MmaD (&acc)[kMaxHd / 8], const MmaD (&p)[N], const T* v, int pitch, int hd,
                        int first, int last) {
    SHARDLAB_UNROLL
    for (int kb = 0; kb < N / 2; ++kb) {
        if (kb < first || kb >= last) continue;
        const MmaA fp = a_from<T>(p[2 * kb], p[2 * kb + 1]);
        SHARDLAB_UNROLL
        for (int n = 0; n < kMaxHd / 8; n += 2) { // hd is a multiple of 16: pairs of blocks
            if (n * 8 >= hd) break;
            MmaB fb[2];
            ldmatrix_b_cols(fb, v + kb * 16 * pitch + n * 8, pitch);
            mma<T>(acc[n], fp, fb[0]);
            mma<T>(acc[n + 1], fp, fb[1]);
        }
    }
}

// Writes acc (the warp's 16 rows x hd, times `scale`) to rows row0 .. row0 + 15 of dst (row
// stride `stride`), rows past T skipped: each lane its two columns of each 8-column block.
template <int kMaxHd, typename T>
__device__ void write_rows(T* dst, std::size_t stride, int row0, int T_,
                           const MmaD (&acc)[kMaxHd / 8], float scale, int hd) {
    const int g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    SHARDLAB_UNROLL
    for (int n = 0; n < kMaxHd / 8; ++n) {
        if (n * 8 >= hd) break;
        for (int half = 0; half < 2; ++half) {
            const int row = row0 + g + 8 * half;
            if (row >= T_) continue;
            T* d = dst + std::size_t(row) * stride + n * 8 + 2 * t;
            d[0] = from_f32<T>(acc[n].x[2 * half] * scale);
            d[1] = from_f32<T>(acc[n].x[2 * half + 1] * scale);
        }
    }
}

__device__ __forceinline__ float row_max4(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float row_sum4(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// Sets the scores a tile's mask hides to -inf (2^-inf = 0: no probability); keep(n, i) says whether
// element i of 8-column block n stays. Only the tiles that the causal diagonal or the sequence's
// end cross call it: the others skip its index arithmetic.
template <int N, typename Keep>
__device__ void mask(MmaD (&s)[N], Keep keep) {
    SHARDLAB_UNROLL
    for (int n = 0; n < N; ++n)
        for (int i = 0; i < 4; ++i)
            if (!keep(n, i)) s[n].x[i] = -INFINITY;
}

// One block per (query tile, query head, batch). kRegs: the warp's Q rows held in registers for
// the whole walk of key tiles, instead of read from the shared tile for each. Always two stages:
// 87,040 B at hd 128, under every sm_80+ GPU's opt-in (99 KiB at the least).
template <int kMaxHd, bool kRegs, typename T>
__global__ void __launch_bounds__(kThreads)
    mma_forward_kernel(T* out, float* lse, const T* qkv, int T_, int C, int H, int Hkv,
                       float scale) {
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd, pitch = tile_pitch(hd);
    const int warp = int(threadIdx.x / 32), g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    SHARDLAB_DYNAMIC_SHARED(unsigned char, raw);
    unsigned char* at_byte = raw;
    T* Qs = carve<T>(at_byte, std::size_t(kTile) * pitch);
    const auto Ks = carve_stages<T, 2>(at_byte, std::size_t(kTile) * pitch);
    const auto Vs = carve_stages<T, 2>(at_byte, std::size_t(kTile) * pitch);
    // The last query tile first: it walks the most key tiles (causal), so the longest blocks start
    // in the first wave and the grid's tail is short ones.
    const int qt = int(gridDim.x - 1 - blockIdx.x), h = int(blockIdx.y), b = int(blockIdx.z);
    const int q0 = qt * kTile + warp * kRows + g; // this lane's rows: q0 and q0 + 8
    const std::size_t stride = at.row();
    const T* rows = qkv + std::size_t(b) * T_ * stride;
    const T* kh = rows + at.k_col(at.kv_of(h)); // the kv head's k and v columns
    const T* vh = rows + at.v_col(at.kv_of(h));

    // Starts the copies of key tile j (its K and V rows).
    auto fetch = [&](int j) {
        load_tile<kMaxHd>(Ks[j], kh, stride, j * kTile, T_, hd);
        load_tile<kMaxHd>(Vs[j], vh, stride, j * kTile, T_, hd);
        cp_async_commit();
    };
    load_tile<kMaxHd>(Qs, rows + at.q_col(h), stride, qt * kTile, T_, hd);
    fetch(0); // Q in the same group
    WarpRows<kRegs, kMaxHd, T> q;
    const float scale_log2 = scale * kLog2e;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}; // per row, in fp32; m in log2 units
    MmaD o[kMaxHd / 8] = {};                                  // unnormalised output
    for (int kt = 0; kt <= qt; ++kt) { // causal: no key tile after the diagonal one
        const T* Kt = Ks[kt];
        const T* Vt = Vs[kt];
        cp_async_wait<0>(); // key tile kt (and the first time, Q) has landed for this thread
        // ... for every thread; and everyone is done with tile kt - 1, whose buffers the prefetch
        // below refills: one barrier a tile.
        __syncthreads();
        if (kt < qt) fetch(kt + 1);
        if (kt == 0) q.load(Qs + warp * kRows * pitch, pitch, hd);
        // In the diagonal tile, 8-key blocks after the warp's last row are wholly masked.
        const int blocks = kt == qt ? 2 * (warp + 1) : kCols;
        MmaD s[kCols] = {};
        scores<kMaxHd>(s, q.operands(), Kt, pitch, hd, 0, blocks);
        if (kt == qt) // only the diagonal tile holds keys after a query, or past T
            mask(s, [&](int n, int i) {
                const int key = kt * kTile + n * 8 + 2 * t + i % 2, query = q0 + 8 * (i / 2);
                return n < blocks && key <= query && key < T_;
            });

        float tile_max[2] = {-INFINITY, -INFINITY}; // of the raw scores (scale_log2 > 0)
        SHARDLAB_UNROLL
        for (int n = 0; n < kCols; ++n)
            for (int i = 0; i < 4; ++i) tile_max[i / 2] = fmaxf(tile_max[i / 2], s[n].x[i]);
        float rescale[2], base[2], p_sum[2] = {0.0f, 0.0f};
        for (int r = 0; r < 2; ++r) {
            const float m_new = fmaxf(m[r], row_max4(tile_max[r]) * scale_log2);
            // A real row's first key tile holds a key at or before it, and a padding row's (q >= T)
            // keys 0..T-1 pass its mask, so m_new is finite; the guard keeps a fully masked row at
            // zeros rather than NaN.
            base[r] = m_new == -INFINITY ? 0.0f : m_new;
            rescale[r] =
                fast_exp2(m[r] - base[r]); // what the sum and O so far were measured against
            m[r] = m_new;
        }
        SHARDLAB_UNROLL
        for (int n = 0; n < kCols; ++n)
            for (int i = 0; i < 4; ++i) {
                // P = e^(scale s - m) = 2^(s scale log2(e) - m), m in log2 units: one fma
                s[n].x[i] = fast_exp2(fmaf(s[n].x[i], scale_log2, -base[i / 2])); // rounded to T
                p_sum[i / 2] += s[n].x[i]; // l from the unrounded probabilities
            }
        for (int r = 0; r < 2; ++r) l[r] = l[r] * rescale[r] + row_sum4(p_sum[r]);
        SHARDLAB_UNROLL
        for (int n = 0; n < kMaxHd / 8; ++n)
            for (int i = 0; i < 4; ++i) o[n].x[i] *= rescale[i / 2];
        product<kMaxHd>(o, s, Vt, pitch, hd, 0, blocks / 2);
    }
    for (int r = 0; r < 2; ++r) {
        const int q = q0 + 8 * r;
        if (q >= T_) continue; // a row past the end of the sequence (the last tile's padding)
        T* dst = out + (std::size_t(b) * T_ + q) * C + std::size_t(h) * hd + 2 * t;
        const float inv_l = 1.0f / l[r]; // one division a row, not one per element
        SHARDLAB_UNROLL
        for (int n = 0; n < kMaxHd / 8; ++n) {
            if (n * 8 >= hd) break;
            dst[n * 8] = from_f32<T>(o[n].x[2 * r] * inv_l);
            dst[n * 8 + 1] = from_f32<T>(o[n].x[2 * r + 1] * inv_l);
        }
        if (t == 0)
            lse[(std::size_t(b) * H + h) * T_ + q] = m[r] * kLn2 + logf(l[r]); // natural log
    }
}

// dK, dV of one key tile: one block per (key tile, kv head, batch), walking, for each query head of
// the kv head's group in order, the query tiles from the diagonal one down, 32 queries per pass
// (the group's sum stays in the accumulators: one fixed sequence of mma calls). A warp's rows are
// 16 keys; the columns of its score accumulators are queries (S^T = K Q^T, dP^T = V dO^T), so P^T
// and dS^T are A operands as they stand. kRegs: the warp's K and V rows held in registers.
// kStages: buffers per streamed tile, 2 where the device's shared memory allows, else 1
// (stages_for below).
template <int kMaxHd, bool kRegs, int kStages, typename T>
__global__ void __launch_bounds__(kThreads)
    mma_backward_kv_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D,
                           int T_, int C, int H, int Hkv, float scale) {
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd, pitch = tile_pitch(hd);
    const int warp = int(threadIdx.x / 32), g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    SHARDLAB_DYNAMIC_SHARED(unsigned char, raw);
    unsigned char* at_byte = raw;
    T* Ks = carve<T>(at_byte, std::size_t(kTile) * pitch);
    T* Vs = carve<T>(at_byte, std::size_t(kTile) * pitch);
    const auto Qs = carve_stages<T, kStages>(at_byte, std::size_t(kTile) * pitch);
    const auto dOs = carve_stages<T, kStages>(at_byte, std::size_t(kTile) * pitch);
    const auto Ls = carve_stages<float, kStages>(at_byte, kTile); // the query tile's lse
    const auto Ds = carve_stages<float, kStages>(at_byte, kTile); // and D
    const int kt = int(blockIdx.x), kv = int(blockIdx.y), b = int(blockIdx.z);
    const int key0 = kt * kTile + warp * kRows + g; // this lane's keys: key0 and key0 + 8
    const float scale_log2 = scale * kLog2e;
    const std::size_t stride = at.row();
    const T* rows = qkv + std::size_t(b) * T_ * stride;

    // The group's heads in order, each one's query tiles from the diagonal one (causal) down: one
    // walk over the pairs, as in the other flash kernels.
    const int walk = tiles(T_) - kt, steps = at.group() * walk;
    // Starts the copies of step `step`'s query tile: Q, dO, lse, D.
    auto fetch = [&](int step) {
        const int h = kv * at.group() + step / walk, qt = kt + step % walk;
        const std::size_t bh = std::size_t(b) * H + h;
        load_tile<kMaxHd>(Qs[step], rows + at.q_col(h), stride, qt * kTile, T_, hd);
        load_tile<kMaxHd>(dOs[step], dout + std::size_t(b) * T_ * C + std::size_t(h) * hd,
                          std::size_t(C), qt * kTile, T_, hd);
        if (threadIdx.x < unsigned(kTile)) {
            const int qi = qt * kTile + int(threadIdx.x), from = qi < T_ ? qi : qt * kTile;
            cp_async<4>(Ls[step] + threadIdx.x, lse + bh * T_ + from, qi < T_); // else 0
            cp_async<4>(Ds[step] + threadIdx.x, D + bh * T_ + from, qi < T_);
        }
        cp_async_commit();
    };
    load_tile<kMaxHd>(Ks, rows + at.k_col(kv), stride, kt * kTile, T_, hd);
    load_tile<kMaxHd>(Vs, rows + at.v_col(kv), stride, kt * kTile, T_, hd);
    fetch(0); // K and V in the same group
    WarpRows<kRegs, kMaxHd, T> kw, vw;
    MmaD dk[kMaxHd / 8] = {}, dv[kMaxHd / 8] = {};
    for (int step = 0; step < steps; ++step) {
        const int qt = kt + step % walk;
        const T* Qt = Qs[step];
        const T* dOt = dOs[step];
        const float* Lt = Ls[step];
        const float* Dt = Ds[step];
        cp_async_wait<0>(); // this step's tiles (and the first time, K and V) have landed here
        // ... for every thread. With two stages everyone is also done with the previous step's
        // buffers, which the prefetch below refills: one barrier a step.
        __syncthreads();
        if (kStages == 2 && step + 1 < steps) fetch(step + 1);
        if (step == 0) {
            kw.load(Ks + warp * kRows * pitch, pitch, hd);
            vw.load(Vs + warp * kRows * pitch, pitch, hd);
        }
        // Only the diagonal tile holds queries before a key; only the last, queries past T.
        const bool masked = qt == kt || (qt + 1) * kTile > T_;
        for (int pass = 0; pass < kCols / kPass; ++pass) {
            const int c0 = pass * kPass * 8; // the pass's first column (query) of the tile
            // In the diagonal tile, 8-query blocks before the warp's first key are wholly masked.
            const int first = qt == kt && 2 * warp > pass * kPass ? 2 * warp - pass * kPass : 0;
            if (first >= kPass) continue;
            MmaD st[kPass] = {}, dpt[kPass] = {};
            scores<kMaxHd>(st, kw.operands(), Qt + c0 * pitch, pitch, hd, first, kPass);   // S^T
            scores<kMaxHd>(dpt, vw.operands(), dOt + c0 * pitch, pitch, hd, first, kPass); // dP^T
            if (masked) // keys after a query, queries past T, and the blocks not computed
                mask(st, [&](int n, int i) {
                    const int query = qt * kTile + c0 + n * 8 + 2 * t + i % 2;
                    return n >= first && key0 + 8 * (i / 2) <= query && query < T_;
                });
            SHARDLAB_UNROLL
            for (int n = 0; n < kPass; ++n) {
                const int j = c0 + n * 8 + 2 * t; // this lane's queries j, j + 1 of the tile
                const float2 lse = *reinterpret_cast<const float2*>(Lt + j);
                const float2 d = *reinterpret_cast<const float2*>(Dt + j);
                const float lse2[2] = {lse.x * kLog2e, lse.y * kLog2e}; // in log2 units
                for (int i = 0; i < 4; ++i) {
                    const float p = fast_exp2(fmaf(st[n].x[i], scale_log2, -lse2[i % 2]));
                    st[n].x[i] = p;                                        // P^T (0 where masked)
                    dpt[n].x[i] = p * (dpt[n].x[i] - (i % 2 ? d.y : d.x)); // dS^T
                }
            }
            product<kMaxHd>(dv, st, dOt + c0 * pitch, pitch, hd, first / 2, kPass / 2);
            product<kMaxHd>(dk, dpt, Qt + c0 * pitch, pitch, hd, first / 2, kPass / 2);
        }
        if (kStages == 1 && step + 1 < steps) {
            __syncthreads(); // one stage: everyone is done with this step's buffers before refill
            fetch(step + 1);
        }
    }
    T* drows = dqkv + std::size_t(b) * T_ * stride;
    const int row0 = kt * kTile + warp * kRows;
    write_rows<kMaxHd>(drows + at.k_col(kv), stride, row0, T_, dk, scale, hd);
    write_rows<kMaxHd>(drows + at.v_col(kv), stride, row0, T_, dv, 1.0f, hd);
}

// dQ of one query tile: one block per (query tile, head, batch), walking the key tiles up to the
// diagonal, 32 keys per pass. A warp's rows are 16 queries, the columns of its accumulators keys.
// kRegs: the warp's Q and dO rows held in registers. kStages: as for dK/dV.
template <int kMaxHd, bool kRegs, int kStages, typename T>
__global__ void __launch_bounds__(kThreads)
    mma_backward_q_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D,
                          int T_, int C, int H, int Hkv, float scale) {
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd, pitch = tile_pitch(hd);
    const int warp = int(threadIdx.x / 32), g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    SHARDLAB_DYNAMIC_SHARED(unsigned char, raw);
    unsigned char* at_byte = raw;
    T* Qs = carve<T>(at_byte, std::size_t(kTile) * pitch);
    T* dOs = carve<T>(at_byte, std::size_t(kTile) * pitch);
    const auto Ks = carve_stages<T, kStages>(at_byte, std::size_t(kTile) * pitch);
    const auto Vs = carve_stages<T, kStages>(at_byte, std::size_t(kTile) * pitch);
    // The last query tile first: it walks the most key tiles (causal), so the longest blocks start
    // in the first wave and the grid's tail is short ones.
    const int qt = int(gridDim.x - 1 - blockIdx.x), h = int(blockIdx.y), b = int(blockIdx.z);
    const int q0 = qt * kTile + warp * kRows + g; // this lane's queries: q0 and q0 + 8
    const float scale_log2 = scale * kLog2e;
    const std::size_t stride = at.row(), bh = std::size_t(b) * H + h;
    const T* rows = qkv + std::size_t(b) * T_ * stride;
    const T* kh = rows + at.k_col(at.kv_of(h)); // the kv head's k and v columns
    const T* vh = rows + at.v_col(at.kv_of(h));
    const T* dhead = dout + std::size_t(b) * T_ * C + std::size_t(h) * hd;

    // Starts the copies of key tile j (its K and V rows).
    auto fetch = [&](int j) {
        load_tile<kMaxHd>(Ks[j], kh, stride, j * kTile, T_, hd);
        load_tile<kMaxHd>(Vs[j], vh, stride, j * kTile, T_, hd);
        cp_async_commit();
    };
    load_tile<kMaxHd>(Qs, rows + at.q_col(h), stride, qt * kTile, T_, hd);
    load_tile<kMaxHd>(dOs, dhead, std::size_t(C), qt * kTile, T_, hd);
    fetch(0); // Q and dO in the same group
    WarpRows<kRegs, kMaxHd, T> qw, dow;
    float row_lse2[2], row_D[2]; // lse in log2 units
    for (int r = 0; r < 2; ++r) {
        const int q = q0 + 8 * r;
        row_lse2[r] = q < T_ ? lse[bh * T_ + q] * kLog2e : 0.0f;
        row_D[r] = q < T_ ? D[bh * T_ + q] : 0.0f;
    }
    MmaD dq[kMaxHd / 8] = {};
    for (int kt = 0; kt <= qt; ++kt) {
        const T* Kt = Ks[kt];
        const T* Vt = Vs[kt];
        cp_async_wait<0>(); // key tile kt (and the first time, Q and dO) has landed here
        // ... for every thread. With two stages everyone is also done with tile kt - 1, whose
        // buffers the prefetch below refills: one barrier a tile.
        __syncthreads();
        if (kStages == 2 && kt < qt) fetch(kt + 1);
        if (kt == 0) {
            qw.load(Qs + warp * kRows * pitch, pitch, hd);
            dow.load(dOs + warp * kRows * pitch, pitch, hd);
        }
        // Only the diagonal tile holds keys after a query; only the last, queries past T.
        const bool masked = kt == qt || (qt + 1) * kTile > T_;
        for (int pass = 0; pass < kCols / kPass; ++pass) {
            const int c0 = pass * kPass * 8; // the pass's first column (key) of the tile
            // In the diagonal tile, 8-key blocks after the warp's last query are wholly masked.
            const int diagonal_last = 2 * (warp + 1) - pass * kPass;
            const int last = qt == kt && diagonal_last < kPass ? diagonal_last : kPass;
            if (last <= 0) continue;
            MmaD s[kPass] = {}, dp[kPass] = {};
            scores<kMaxHd>(s, qw.operands(), Kt + c0 * pitch, pitch, hd, 0, last);
            scores<kMaxHd>(dp, dow.operands(), Vt + c0 * pitch, pitch, hd, 0, last);
            if (masked) // keys after a query, queries past T, and the blocks not computed
                mask(s, [&](int n, int i) {
                    const int key = kt * kTile + c0 + n * 8 + 2 * t + i % 2;
                    const int query = q0 + 8 * (i / 2);
                    return n < last && key <= query && query < T_;
                });
            SHARDLAB_UNROLL
            for (int n = 0; n < kPass; ++n)
                for (int i = 0; i < 4; ++i) {
                    const int r = i / 2;
                    const float p = fast_exp2(fmaf(s[n].x[i], scale_log2, -row_lse2[r]));
                    dp[n].x[i] = p * (dp[n].x[i] - row_D[r]); // dS (0 where masked)
                }
            product<kMaxHd>(dq, dp, Kt + c0 * pitch, pitch, hd, 0, last / 2);
        }
        if (kStages == 1 && kt < qt) {
            __syncthreads(); // one stage: everyone is done with tile kt before its buffers refill
            fetch(kt + 1);
        }
    }
    T* dQ = dqkv + std::size_t(b) * T_ * stride + at.q_col(h);
    write_rows<kMaxHd>(dQ, stride, qt * kTile + warp * kRows, T_, dq, scale, hd);
}

// The shared bytes of each kernel for head dim hd and `stages` buffers per streamed tile (the
// carve order above).
std::size_t tiles_bytes(int hd, int n) {
    return std::size_t(n) * kTile * tile_pitch(hd) * 2; // 16-bit tiles
}
std::size_t forward_shared(int hd) {
    return tiles_bytes(hd, 5); // Q and two each of K, V
}
std::size_t backward_kv_shared(int hd, int stages) {
    return tiles_bytes(hd, 2 + 2 * stages) +
           2 * stages * kTile * sizeof(float); // K, V; Q, dO, lse, D
}
std::size_t backward_q_shared(int hd, int stages) {
    return tiles_bytes(hd, 2 + 2 * stages); // Q, dO; K, V
}

// The backward's stages: two where the device lets a block have their shared memory, else one.
// Every sm_80+ GPU lets it at hd 64 (56 KB at most); at hd 128 (105 KB) an H100's 227 KB do, an
// sm_86/89's 99 KB do not.
int stages_for(std::size_t two_stage_bytes) {
    int device = 0, optin = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
               "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
    return two_stage_bytes <= std::size_t(optin) ? 2 : 1;
}

} // namespace

// Runs f(std::bool_constant<regs && kMaxHd == 64>, std::integral_constant<int, stages>) for the
// kernels' kRegs and kStages: at hd 128 the row operands would take 32 more registers a thread than
// the dK/dV kernel's 226 leave (ptxas, sm_90), and one stage is only ever needed there.
// (flash_attention_path.h's mma_rows_in_registers_fit tells benchmarks the same.)
template <int kMaxHd, typename F>
void with_variant(bool regs, int stages, F&& f) {
    if constexpr (kMaxHd == 64) {
        if (regs) return f(std::true_type{}, std::integral_constant<int, 2>{});
        return f(std::false_type{}, std::integral_constant<int, 2>{});
    } else {
        if (stages == 1) return f(std::false_type{}, std::integral_constant<int, 1>{});
        return f(std::false_type{}, std::integral_constant<int, 2>{});
    }
}
template <int kMaxHd, typename F>
void with_regs(bool regs, F&& f) {
    with_variant<kMaxHd>(regs, 2, [&](auto r, auto) { f(r); });
}

void flash_attention_mma_forward(cudaStream_t s, void* out, float* lse, const void* qkv, int B,
                                 int T, int C, int H, int Hkv, DType t, bool rows_in_registers) {
    const int hd = C / H;
    const float scale = 1.0f / std::sqrt(float(hd));
    const dim3 grid(unsigned(tiles(T)), unsigned(H), unsigned(B));
    dispatch_tensor_cores(t, hd, "flash attention on mma.sync", [&](auto tag, auto max_hd) {
        using P = typename decltype(tag)::type;
        constexpr int kMaxHd = decltype(max_hd)::value;
        with_regs<kMaxHd>(rows_in_registers, [&](auto regs) {
            launch_flash("flash_attention_mma_forward",
                         mma_forward_kernel<kMaxHd, decltype(regs)::value, P>, grid, kThreads,
                         forward_shared(hd), s, static_cast<P*>(out), lse,
                         static_cast<const P*>(qkv), T, C, H, Hkv, scale);
        });
    });
}

void flash_attention_mma_backward(cudaStream_t s, void* dqkv, const void* dout, const void* qkv,
                                  const float* lse, const float* row_dots, int B, int T, int C,
                                  int H, int Hkv, DType t, bool rows_in_registers) {
    const int hd = C / H;
    const float scale = 1.0f / std::sqrt(float(hd));
    const dim3 q_grid(unsigned(tiles(T)), unsigned(H), unsigned(B));
    const dim3 kv_grid(unsigned(tiles(T)), unsigned(Hkv), unsigned(B)); // a kv head's whole group
    dispatch_tensor_cores(t, hd, "flash attention on mma.sync", [&](auto tag, auto max_hd) {
        using P = typename decltype(tag)::type;
        constexpr int kMaxHd = decltype(max_hd)::value;
        const P* d = static_cast<const P*>(dout);
        const P* x = static_cast<const P*>(qkv);
        const int stages =
            stages_for(std::max(backward_kv_shared(hd, 2), backward_q_shared(hd, 2)));
        with_variant<kMaxHd>(rows_in_registers, stages, [&](auto regs, auto staged) {
            constexpr bool kRegs = decltype(regs)::value;
            constexpr int kStages = decltype(staged)::value;
            launch_flash("flash_attention_mma_backward_kv",
                         mma_backward_kv_kernel<kMaxHd, kRegs, kStages, P>, kv_grid, kThreads,
                         backward_kv_shared(hd, kStages), s, static_cast<P*>(dqkv), d, x, lse,
                         row_dots, T, C, H, Hkv, scale);
            launch_flash("flash_attention_mma_backward_q",
                         mma_backward_q_kernel<kMaxHd, kRegs, kStages, P>, q_grid, kThreads,
                         backward_q_shared(hd, kStages), s, static_cast<P*>(dqkv), d, x, lse,
                         row_dots, T, C, H, Hkv, scale);
        });
    });
}

} // namespace shardlab::cuda
