// Flash attention's register-softmax tensor-core kernels: the design is explained in
// flash_attention_mma.h. Within a warp, lane l (g = l / 4, t = l % 4) holds, of each of the warp's
// 16-row blocks (one, or mma_wide's two), rows g and g + 8, and of
// every 8-column block of a score tile its columns 2t and 2t + 1 — the
// accumulator layout of mma_m16n8k16.h — so a row's reductions run over the 4 lanes of g (two
// butterfly shuffles, the same bits in each lane: a + b = b + a). Each kernel is a template on the
// largest head dim it serves (kMaxHd: 64 or 128), the width it computes at (a smaller head's other
// columns are zeros in its tiles), which sizes its accumulator arrays; loops over them are unrolled
// so that the arrays are indexed by constants (registers, not local memory).
#include "model/kernels/cuda/fast_exp2.h"
#include "model/kernels/cuda/flash_attention_common.h"
#include "model/kernels/cuda/flash_attention_mma.h"
#include "model/kernels/cuda/mma_m16n8k16.h"
#include "model/kernels/cuda/qkv_layout.h"
#include "model/kernels/cuda/with_constant.h"

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
constexpr int kTile = kFlashMmaTile;  // rows of a walked tile (key tiles forward and in dQ, query
                                      // tiles in dK/dV); a block's own tile has kR times as many
constexpr int kWarps = 4;             // each owns kR row blocks of kRows rows (kR = 1: the tile's)
constexpr int kRows = 16;             // mma's m
constexpr int kThreads = kWarps * 32; // 128
constexpr int kCols = kTile / 8;      // 8-column accumulators across a score tile: 8
constexpr int kPass = 4;              // backward's accumulators per pass: 32 columns

__host__ __device__ inline int tiles(int T) {
    return (T + kTile - 1) / kTile;
}
// A 16-bit tile row: width + 8 elements, a 16-byte multiple (ldmatrix reads 16-byte rows) that
// puts consecutive rows 4 banks apart, so the 8 rows of one ldmatrix phase hit 32 distinct banks
// (the width, kMaxHd, a multiple of 16).
__host__ __device__ constexpr int tile_pitch(int width) {
    return width + 8;
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

// The copies of kN-row tiles of a head's hd columns by cp.async (flash_attention_common.h), zeros
// in their columns from hd to kMaxHd: load(tile, r0) starts rows [r0, r0 + kN), there for this
// thread once the copies' group is waited for.
template <int kMaxHd, typename T, int kN = kTile>
struct HeadTiles : TileStream<kN, kThreads, kMaxHd, T> {
    using TileStream<kN, kThreads, kMaxHd, T>::TileStream;
    __device__ void load(T* tile, int r0) const {
        TileStream<kN, kThreads, kMaxHd, T>::load(tile, tile_pitch(kMaxHd), r0);
    }
};

// The last key tile that query tile qt (of 64 kR rows) sees, causal: the one holding its last row,
// or T's last.
__device__ inline int last_key_tile(int qt, int kR, int T_) {
    const int end = (qt + 1) * kR; // key tiles before the query tile's end
    return (end < tiles(T_) ? end : tiles(T_)) - 1;
}

// Where the dK/dV kernel's walk is: query head h, query tile qt; each of the kv head's query heads
// in turn walks its query tiles from `first` (the diagonal one) to `last` (T's). Kept by counting:
// dividing the step by the walk's length took some 30 instructions a step.
struct GroupWalk {
    int h, qt, first, last;
    __device__ void next() {
        if (qt < last) return void(++qt);
        qt = first;
        ++h;
    }
};

// s[r][n] += A_r B^T for each of the warp's kR row blocks r and 8-column blocks n: A_r's operand
// for columns [16 k, 16 k + 16) given by a_of(r, k); B the rows of tile `b` from its row 0 (8 per
// block), by ldmatrix (mma_m16n8k16.h), a B pair per instruction, read once for all kR row blocks.
template <int kMaxHd, int kR, int N, typename T, typename AOf>
__device__ void scores_of(MmaD (&s)[kR][N], AOf a_of, const T* b) {
    constexpr int pitch = tile_pitch(kMaxHd);
    SHARDLAB_UNROLL
    for (int k = 0; k < kMaxHd / 16; ++k) {
        MmaA fa[kR];
        SHARDLAB_UNROLL
        for (int r = 0; r < kR; ++r) fa[r] = a_of(r, k);
        SHARDLAB_UNROLL
        for (int n = 0; n < N; n += 2) { // B operands load in pairs
            MmaB fb[2];
            ldmatrix_b_rows(fb, b + n * 8 * pitch + k * 16, pitch);
            SHARDLAB_UNROLL
            for (int r = 0; r < kR; ++r) {
                mma<T>(s[r][n], fa[r], fb[0]);
                mma<T>(s[r][n + 1], fa[r], fb[1]);
            }
        }
    }
}

// scores_of with the warp's row blocks at `a` in a shared tile (row block r from row 16 r), each
// operand loaded when it is used.
template <int kMaxHd, int kR, int N, typename T>
__device__ void scores(MmaD (&s)[kR][N], const T* a, const T* b) {
    constexpr int pitch = tile_pitch(kMaxHd);
    scores_of<kMaxHd>(
        s, [&](int r, int k) { return ldmatrix_a(a + r * kRows * pitch + k * 16, pitch); }, b);
}

// The warp's rows of a tile, as scores() takes them: with kRegs, their A operands for all columns
// loaded once into registers (rows used against every tile of the walk; one row block); else read
// from the shared tile at every use. Loaded after the barrier that completes the tile.
template <bool kRegs, int kMaxHd, typename T>
struct WarpRows;
template <int kMaxHd, typename T>
struct WarpRows<false, kMaxHd, T> {
    const T* rows = nullptr;
    __device__ void load(const T* a) { rows = a; }
    __device__ const T* operands() const { return rows; }
};
template <int kMaxHd, typename T>
struct WarpRows<true, kMaxHd, T> {
    MmaA fa[kMaxHd / 16] = {};
    __device__ void load(const T* a) {
        SHARDLAB_UNROLL
        for (int k = 0; k < kMaxHd / 16; ++k) fa[k] = ldmatrix_a(a + k * 16, tile_pitch(kMaxHd));
    }
    __device__ const WarpRows& operands() const { return *this; }
};

// scores_of with the warp's one row block's A operands from registers.
template <int kMaxHd, int N, typename T>
__device__ void scores(MmaD (&s)[1][N], const WarpRows<true, kMaxHd, T>& a, const T* b) {
    scores_of<kMaxHd>(
        s, [&](int, int k) { return a.fa[k]; }, b);
}

// acc[r] += P_r V over V's 8-column blocks, for each of the warp's kR row blocks r: P_r its 16 x
// 8N probabilities as accumulators p[r][0 .. N) (rounded to T here), V the rows of tile `v` from
// its row 0 (each B pair read once for all row blocks).
template <int kMaxHd, int kR, int N, typename T>
__device__ void product(MmaD (&acc)[kR][kMaxHd / 8], const MmaD (&p)[kR][N], const T* v) {
    constexpr int pitch = tile_pitch(kMaxHd);
    SHARDLAB_UNROLL
    for (int kb = 0; kb < N / 2; ++kb) {
        MmaA fp[kR];
        SHARDLAB_UNROLL
        for (int r = 0; r < kR; ++r) fp[r] = a_from<T>(p[r][2 * kb], p[r][2 * kb + 1]);
        SHARDLAB_UNROLL
        for (int n = 0; n < kMaxHd / 8; n += 2) { // pairs of blocks
            MmaB fb[2];
            ldmatrix_b_cols(fb, v + kb * 16 * pitch + n * 8, pitch);
            SHARDLAB_UNROLL
            for (int r = 0; r < kR; ++r) {
                mma<T>(acc[r][n], fp[r], fb[0]);
                mma<T>(acc[r][n + 1], fp[r], fb[1]);
            }
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

// The online softmax's step for one row block over a tile of scores s (-inf where masked): the
// running maximum m (log2 units) moves to the tile's, l and o are rescaled to it, and s becomes
// P = e^(scale s - m) in place (rounded to T by the product that takes it); l adds P's rows.
template <int kMaxHd>
__device__ void fold(MmaD (&s)[kCols], float (&m)[2], float (&l)[2], MmaD (&o)[kMaxHd / 8],
                     float scale_log2) {
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
        rescale[r] = fast_exp2(m[r] - base[r]); // what the sum and O so far were measured against
        m[r] = m_new;
    }
    SHARDLAB_UNROLL
    for (int n = 0; n < kCols; ++n)
        for (int i = 0; i < 4; ++i) {
            // P = e^(scale s - m) = 2^(s scale log2(e) - m), m in log2 units: one fma
            s[n].x[i] = fast_exp2(fmaf(s[n].x[i], scale_log2, -base[i / 2]));
            p_sum[i / 2] += s[n].x[i]; // l from the unrounded probabilities
        }
    for (int r = 0; r < 2; ++r) l[r] = l[r] * rescale[r] + row_sum4(p_sum[r]);
    SHARDLAB_UNROLL
    for (int n = 0; n < kMaxHd / 8; ++n)
        for (int i = 0; i < 4; ++i) o[n].x[i] *= rescale[i / 2];
}

// The forward's end for one row block (this lane's rows q0 and q0 + 8 of batch b, head h): out =
// o / l into its head's columns, and lse = m ln 2 + ln l, natural; rows past T are padding.
template <int kMaxHd, typename T>
__device__ void write_normalised(T* out, float* lse, int b, int h, int q0, int T_, int C, int H,
                                 int hd, const MmaD (&o)[kMaxHd / 8], const float (&m)[2],
                                 const float (&l)[2]) {
    const int t = int(threadIdx.x % 4);
    for (int r = 0; r < 2; ++r) {
        const int q = q0 + 8 * r;
        if (q >= T_) continue;
        T* dst = out + (std::size_t(b) * T_ + q) * C + std::size_t(h) * hd + 2 * t;
        const float inv_l = 1.0f / l[r]; // one division a row, not one per element
        SHARDLAB_UNROLL
        for (int n = 0; n < kMaxHd / 8; ++n) {
            if (n * 8 >= hd) break;
            dst[n * 8] = from_f32<T>(o[n].x[2 * r] * inv_l);
            dst[n * 8 + 1] = from_f32<T>(o[n].x[2 * r + 1] * inv_l);
        }
        if (t == 0) lse[(std::size_t(b) * H + h) * T_ + q] = m[r] * kLn2 + logf(l[r]);
    }
}

// One block per (query tile, query head, batch). kRegs: the warp's Q rows held in registers for
// the whole walk of key tiles, instead of read from the shared tile for each. kR: 16-row blocks
// per warp (query tiles of 64 kR rows; key tiles of 64 either way). A row block folds exactly the
// key tiles that the kR = 1 kernel's warp holding its rows does (a warp's 16 kR rows start at a
// multiple of 16 kR, so its row blocks skip the same tiles), so every row gets the same bits.
// Always two stages: 87,040 B at hd 80 to 128, under every sm_80+ GPU's opt-in (99 KiB at least).
template <int kMaxHd, bool kRegs, int kR, typename T>
__global__ void __launch_bounds__(kThreads)
    mma_forward_kernel(T* out, float* lse, const T* qkv, int T_, int C, int H, int Hkv,
                       float scale) {
    constexpr int kQTile = kTile * kR;
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd;
    constexpr int pitch = tile_pitch(kMaxHd);
    const int warp = int(threadIdx.x / 32), g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    SHARDLAB_DYNAMIC_SHARED(unsigned char, raw);
    unsigned char* at_byte = raw;
    T* Qs = carve<T>(at_byte, std::size_t(kQTile) * pitch);
    const auto Ks = carve_stages<T, 2>(at_byte, std::size_t(kTile) * pitch);
    const auto Vs = carve_stages<T, 2>(at_byte, std::size_t(kTile) * pitch);
    // The last query tile first: it walks the most key tiles (causal), so the longest blocks start
    // in the first wave and the grid's tail is short ones.
    const int qt = int(gridDim.x - 1 - blockIdx.x), h = int(blockIdx.y), b = int(blockIdx.z);
    const int row0 = qt * kQTile + warp * kRows * kR; // the warp's first row
    const int last_kt = last_key_tile(qt, kR, T_);
    const std::size_t stride = at.row();
    const T* rows = qkv + std::size_t(b) * T_ * stride;
    // The kv head's k and v columns.
    const HeadTiles<kMaxHd, T> k_tiles(rows + at.k_col(at.kv_of(h)), stride, T_, hd);
    const HeadTiles<kMaxHd, T> v_tiles(rows + at.v_col(at.kv_of(h)), stride, T_, hd);

    // Starts the copies of key tile j (its K and V rows).
    auto fetch = [&](int j) {
        k_tiles.load(Ks[j], j * kTile);
        v_tiles.load(Vs[j], j * kTile);
        cp_async_commit();
    };
    HeadTiles<kMaxHd, T, kQTile>(rows + at.q_col(h), stride, T_, hd).load(Qs, qt * kQTile);
    fetch(0); // Q in the same group
    WarpRows<kRegs, kMaxHd, T> q;
    const float scale_log2 = scale * kLog2e;
    // Per row block r and lane row i (rows row0 + 16 r + g + 8 i), in fp32: m (log2 units), l.
    float m[kR][2], l[kR][2];
    MmaD o[kR][kMaxHd / 8] = {}; // unnormalised output
    SHARDLAB_UNROLL
    for (int r = 0; r < kR; ++r)
        for (int i = 0; i < 2; ++i) m[r][i] = -INFINITY, l[r][i] = 0.0f;
    for (int kt = 0; kt <= last_kt; ++kt) {
        const T* Kt = Ks[kt];
        const T* Vt = Vs[kt];
        cp_async_wait<0>(); // key tile kt (and the first time, Q) has landed for this thread
        // ... for every thread; and everyone is done with tile kt - 1, whose buffers the prefetch
        // below refills: one barrier a tile.
        __syncthreads();
        if (kt < last_kt) fetch(kt + 1);
        if (kt == 0) q.load(Qs + warp * kRows * kR * pitch);
        // Only the tiles the diagonal crosses hold keys after a query, or past T: a tile it cuts
        // is masked, in a copy of the code of its own (with_constant.h). A warp whose rows all
        // come before the tile's first key (mma_wide's first two, against the diagonal's second
        // key tile) computes nothing of it.
        with_constant((kt + 1) * kTile > qt * kQTile, [&](auto cut) {
            constexpr bool kCut = decltype(cut)::value;
            if (kCut && row0 + kRows * kR - 1 < kt * kTile) return;
            MmaD s[kR][kCols] = {};
            scores<kMaxHd>(s, q.operands(), Kt);
            SHARDLAB_UNROLL
            for (int r = 0; r < kR; ++r) {
                if (kCut)
                    mask(s[r], [&](int n, int i) {
                        const int key = kt * kTile + n * 8 + 2 * t + i % 2;
                        const int query = row0 + kRows * r + g + 8 * (i / 2);
                        return key <= query && key < T_;
                    });
                fold<kMaxHd>(s[r], m[r], l[r], o[r], scale_log2);
            }
            product<kMaxHd>(o, s, Vt);
        });
    }
    SHARDLAB_UNROLL
    for (int r = 0; r < kR; ++r)
        write_normalised<kMaxHd>(out, lse, b, h, row0 + kRows * r + g, T_, C, H, hd, o[r], m[r],
                                 l[r]);
}

// The dK/dV kernel's blocks an SM that ptxas is asked to leave registers for: at hd 64, 3 with one
// row block a warp (168 registers, where ptxas would take some 180 and allow 2: a few words spill,
// 16 B in mma, 40 B in mma_regs, loaded in each step's copies, outside its passes), 2 with two
// (255); at hd 128 whatever its 250-odd registers give (1 asks nothing).
constexpr int kv_blocks_per_sm(int max_hd, int row_blocks) {
    return max_hd > 64 ? 1 : row_blocks == 1 ? 3 : 2;
}

// dK, dV of one key tile: one block per (key tile, kv head, batch), walking, for each query head of
// the kv head's group in order, the query tiles from the first that sees its keys (causal) down,
// 32 queries per pass (the group's sum stays in the accumulators: one fixed sequence of mma
// calls). A warp's rows are kR blocks of 16 keys (key tiles of 64 kR; query tiles of 64 either
// way); the columns of its score accumulators are queries (S^T = K Q^T, dP^T = V dO^T), so P^T and
// dS^T are A operands as they stand. A row block makes the mma calls that the kR = 1 kernel's warp
// holding its keys makes, in the same order, and no others (a query tile before its keys: none),
// so every key gets the same bits. kRegs: the warp's K and V rows held in registers (one row
// block). kStages: buffers per streamed tile, 2 where the device's shared memory allows, else 1
// (stages_for below).
template <int kMaxHd, bool kRegs, int kR, int kStages, typename T>
__global__ void __launch_bounds__(kThreads, kv_blocks_per_sm(kMaxHd, kR))
    mma_backward_kv_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D,
                           int T_, int C, int H, int Hkv, float scale) {
    static_assert(kR == 1 || !kRegs, "row operands in registers: one row block");
    constexpr int kKeyTile = kTile * kR;
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd;
    constexpr int pitch = tile_pitch(kMaxHd);
    const int warp = int(threadIdx.x / 32), g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    SHARDLAB_DYNAMIC_SHARED(unsigned char, raw);
    unsigned char* at_byte = raw;
    T* Ks = carve<T>(at_byte, std::size_t(kKeyTile) * pitch);
    T* Vs = carve<T>(at_byte, std::size_t(kKeyTile) * pitch);
    const auto Qs = carve_stages<T, kStages>(at_byte, std::size_t(kTile) * pitch);
    const auto dOs = carve_stages<T, kStages>(at_byte, std::size_t(kTile) * pitch);
    const auto Ls = carve_stages<float, kStages>(at_byte, kTile); // the query tile's lse
    const auto Ds = carve_stages<float, kStages>(at_byte, kTile); // and D
    const int kt = int(blockIdx.x), kv = int(blockIdx.y), b = int(blockIdx.z);
    const int row0 = kt * kKeyTile + warp * kRows * kR; // the warp's first key
    const float scale_log2 = scale * kLog2e;
    const std::size_t stride = at.row();
    const T* rows = qkv + std::size_t(b) * T_ * stride;

    // The group's heads in order, each one's query tiles from the first holding a query at or
    // after the block's first key (causal) down: one walk over the pairs, as in the other flash
    // kernels.
    const int first_qt = kt * kR;
    const int steps = at.group() * (tiles(T_) - first_qt);
    GroupWalk here{kv * at.group(), first_qt, first_qt, tiles(T_) - 1}; // the step being computed
    GroupWalk ahead = here;                                             // and the one fetched next
    // Starts the copies of step `step`'s query tile: Q, dO, lse, D.
    auto fetch = [&](int step) {
        const int h = ahead.h, qt = ahead.qt;
        ahead.next();
        const std::size_t bh = std::size_t(b) * H + h;
        HeadTiles<kMaxHd, T>(rows + at.q_col(h), stride, T_, hd).load(Qs[step], qt * kTile);
        HeadTiles<kMaxHd, T>(dout + std::size_t(b) * T_ * C + std::size_t(h) * hd, std::size_t(C),
                             T_, hd)
            .load(dOs[step], qt * kTile);
        if (threadIdx.x < unsigned(kTile)) {
            const int qi = qt * kTile + int(threadIdx.x), from = qi < T_ ? qi : qt * kTile;
            cp_async<4>(Ls[step] + threadIdx.x, lse + bh * T_ + from, qi < T_); // else 0
            cp_async<4>(Ds[step] + threadIdx.x, D + bh * T_ + from, qi < T_);
        }
        cp_async_commit();
    };
    HeadTiles<kMaxHd, T, kKeyTile>(rows + at.k_col(kv), stride, T_, hd).load(Ks, kt * kKeyTile);
    HeadTiles<kMaxHd, T, kKeyTile>(rows + at.v_col(kv), stride, T_, hd).load(Vs, kt * kKeyTile);
    fetch(0); // K and V in the same group
    WarpRows<kRegs, kMaxHd, T> kw, vw;
    MmaD dk[kR][kMaxHd / 8] = {}, dv[kR][kMaxHd / 8] = {}; // the warp's row blocks: 16 keys each
    for (int step = 0; step < steps; ++step, here.next()) {
        const int qt = here.qt;
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
            kw.load(Ks + warp * kRows * kR * pitch);
            vw.load(Vs + warp * kRows * kR * pitch);
        }
        // Only the query tiles the diagonal crosses hold queries before a key; only the last,
        // queries past T.
        with_constant(qt < first_qt + kR || (qt + 1) * kTile > T_, [&](auto cut) {
            constexpr bool kCut = decltype(cut)::value;
            for (int pass = 0; pass < kCols / kPass; ++pass) {
                const int c0 = pass * kPass * 8; // the pass's first column (query) of the tile
                // Where the diagonal cuts the tile, a warp whose keys all come after the pass's
                // last query (all of them, for mma_wide's upper keys against the query tile before
                // them) computes nothing of the pass.
                if (kCut && row0 > qt * kTile + c0 + kPass * 8 - 1) continue;
                MmaD st[kR][kPass] = {}, dpt[kR][kPass] = {};
                scores<kMaxHd>(st, kw.operands(), Qt + c0 * pitch);   // S^T
                scores<kMaxHd>(dpt, vw.operands(), dOt + c0 * pitch); // dP^T
                SHARDLAB_UNROLL
                for (int r = 0; r < kR; ++r) {
                    const int key0 = row0 + kRows * r + g; // this lane's keys: key0 and key0 + 8
                    // Keys after a query, queries past T.
                    if (kCut)
                        mask(st[r], [&](int n, int i) {
                            const int query = qt * kTile + c0 + n * 8 + 2 * t + i % 2;
                            return key0 + 8 * (i / 2) <= query && query < T_;
                        });
                    SHARDLAB_UNROLL
                    for (int n = 0; n < kPass; ++n) {
                        // This lane's queries j, j + 1 of the tile.
                        const int j = c0 + n * 8 + 2 * t;
                        const float2 lse = *reinterpret_cast<const float2*>(Lt + j);
                        const float2 d = *reinterpret_cast<const float2*>(Dt + j);
                        const float lse2[2] = {lse.x * kLog2e, lse.y * kLog2e}; // in log2 units
                        for (int i = 0; i < 4; ++i) {
                            const float p =
                                fast_exp2(fmaf(st[r][n].x[i], scale_log2, -lse2[i % 2]));
                            st[r][n].x[i] = p; // P^T (0 where masked)
                            dpt[r][n].x[i] = p * (dpt[r][n].x[i] - (i % 2 ? d.y : d.x)); // dS^T
                        }
                    }
                }
                product<kMaxHd>(dv, st, dOt + c0 * pitch);
                product<kMaxHd>(dk, dpt, Qt + c0 * pitch);
            }
        });
        if (kStages == 1 && step + 1 < steps) {
            __syncthreads(); // one stage: everyone is done with this step's buffers before refill
            fetch(step + 1);
        }
    }
    T* drows = dqkv + std::size_t(b) * T_ * stride;
    SHARDLAB_UNROLL
    for (int r = 0; r < kR; ++r) {
        write_rows<kMaxHd>(drows + at.k_col(kv), stride, row0 + kRows * r, T_, dk[r], scale, hd);
        write_rows<kMaxHd>(drows + at.v_col(kv), stride, row0 + kRows * r, T_, dv[r], 1.0f, hd);
    }
}

// dQ of one query tile: one block per (query tile, head, batch), walking the key tiles up to the
// diagonal, 32 keys per pass. A warp's rows are kR blocks of 16 queries (query tiles of 64 kR
// rows; key tiles of 64 either way), the columns of its accumulators keys; as in the forward, a
// row block makes the kR = 1 kernel's mma calls for its rows. kRegs: the warp's Q and dO rows held
// in registers (one row block). kStages: as for dK/dV.
template <int kMaxHd, bool kRegs, int kR, int kStages, typename T>
__global__ void __launch_bounds__(kThreads)
    mma_backward_q_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D,
                          int T_, int C, int H, int Hkv, float scale) {
    constexpr int kQTile = kTile * kR;
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd;
    constexpr int pitch = tile_pitch(kMaxHd);
    const int warp = int(threadIdx.x / 32), g = int(threadIdx.x % 32) / 4, t = int(threadIdx.x % 4);
    SHARDLAB_DYNAMIC_SHARED(unsigned char, raw);
    unsigned char* at_byte = raw;
    T* Qs = carve<T>(at_byte, std::size_t(kQTile) * pitch);
    T* dOs = carve<T>(at_byte, std::size_t(kQTile) * pitch);
    const auto Ks = carve_stages<T, kStages>(at_byte, std::size_t(kTile) * pitch);
    const auto Vs = carve_stages<T, kStages>(at_byte, std::size_t(kTile) * pitch);
    // The last query tile first: it walks the most key tiles (causal), so the longest blocks start
    // in the first wave and the grid's tail is short ones.
    const int qt = int(gridDim.x - 1 - blockIdx.x), h = int(blockIdx.y), b = int(blockIdx.z);
    const int row0 = qt * kQTile + warp * kRows * kR; // the warp's first query
    const int last_kt = last_key_tile(qt, kR, T_);
    const float scale_log2 = scale * kLog2e;
    const std::size_t stride = at.row(), bh = std::size_t(b) * H + h;
    const T* rows = qkv + std::size_t(b) * T_ * stride;
    // The kv head's k and v columns.
    const HeadTiles<kMaxHd, T> k_tiles(rows + at.k_col(at.kv_of(h)), stride, T_, hd);
    const HeadTiles<kMaxHd, T> v_tiles(rows + at.v_col(at.kv_of(h)), stride, T_, hd);
    const T* dhead = dout + std::size_t(b) * T_ * C + std::size_t(h) * hd;

    // Starts the copies of key tile j (its K and V rows).
    auto fetch = [&](int j) {
        k_tiles.load(Ks[j], j * kTile);
        v_tiles.load(Vs[j], j * kTile);
        cp_async_commit();
    };
    HeadTiles<kMaxHd, T, kQTile>(rows + at.q_col(h), stride, T_, hd).load(Qs, qt * kQTile);
    HeadTiles<kMaxHd, T, kQTile>(dhead, std::size_t(C), T_, hd).load(dOs, qt * kQTile);
    fetch(0); // Q and dO in the same group
    WarpRows<kRegs, kMaxHd, T> qw, dow;
    float row_lse2[kR][2], row_D[kR][2]; // per row block and lane row; lse in log2 units
    SHARDLAB_UNROLL
    for (int r = 0; r < kR; ++r)
        for (int i = 0; i < 2; ++i) {
            const int q = row0 + kRows * r + g + 8 * i;
            row_lse2[r][i] = q < T_ ? lse[bh * T_ + q] * kLog2e : 0.0f;
            row_D[r][i] = q < T_ ? D[bh * T_ + q] : 0.0f;
        }
    MmaD dq[kR][kMaxHd / 8] = {};
    for (int kt = 0; kt <= last_kt; ++kt) {
        const T* Kt = Ks[kt];
        const T* Vt = Vs[kt];
        cp_async_wait<0>(); // key tile kt (and the first time, Q and dO) has landed here
        // ... for every thread. With two stages everyone is also done with tile kt - 1, whose
        // buffers the prefetch below refills: one barrier a tile.
        __syncthreads();
        if (kStages == 2 && kt < last_kt) fetch(kt + 1);
        if (kt == 0) {
            qw.load(Qs + warp * kRows * kR * pitch);
            dow.load(dOs + warp * kRows * kR * pitch);
        }
        // Only the tiles the diagonal crosses hold keys after a query; only the last, queries
        // past T.
        with_constant((kt + 1) * kTile > qt * kQTile || (qt + 1) * kQTile > T_, [&](auto cut) {
            constexpr bool kCut = decltype(cut)::value;
            for (int pass = 0; pass < kCols / kPass; ++pass) {
                const int c0 = pass * kPass * 8; // the pass's first column (key) of the tile
                // Where the diagonal cuts the tile, a warp whose rows all come before the pass's
                // first key computes nothing of the pass.
                if (kCut && row0 + kRows * kR - 1 < kt * kTile + c0) continue;
                MmaD s[kR][kPass] = {}, dp[kR][kPass] = {};
                scores<kMaxHd>(s, qw.operands(), Kt + c0 * pitch);
                scores<kMaxHd>(dp, dow.operands(), Vt + c0 * pitch);
                SHARDLAB_UNROLL
                for (int r = 0; r < kR; ++r) {
                    if (kCut) // keys after a query, queries past T
                        mask(s[r], [&](int n, int i) {
                            const int key = kt * kTile + c0 + n * 8 + 2 * t + i % 2;
                            const int query = row0 + kRows * r + g + 8 * (i / 2);
                            return key <= query && query < T_;
                        });
                    SHARDLAB_UNROLL
                    for (int n = 0; n < kPass; ++n)
                        for (int i = 0; i < 4; ++i) {
                            const float p =
                                fast_exp2(fmaf(s[r][n].x[i], scale_log2, -row_lse2[r][i / 2]));
                            dp[r][n].x[i] =
                                p * (dp[r][n].x[i] - row_D[r][i / 2]); // dS (0 if masked)
                        }
                }
                product<kMaxHd>(dq, dp, Kt + c0 * pitch);
            }
        });
        if (kStages == 1 && kt < last_kt) {
            __syncthreads(); // one stage: everyone is done with tile kt before its buffers refill
            fetch(kt + 1);
        }
    }
    T* dQ = dqkv + std::size_t(b) * T_ * stride + at.q_col(h);
    SHARDLAB_UNROLL
    for (int r = 0; r < kR; ++r)
        write_rows<kMaxHd>(dQ, stride, row0 + kRows * r, T_, dq[r], scale, hd);
}

// The shared bytes of each kernel for tiles `width` (kMaxHd) wide, `row_blocks` 16-row blocks a
// warp and, backward, `stages` buffers per streamed tile (the forward always two; the carve order
// above).
std::size_t tiles_bytes(int width, int n) {
    return std::size_t(n) * kTile * tile_pitch(width) * 2; // 16-bit tiles
}
std::size_t forward_shared(int width, int row_blocks) {
    return tiles_bytes(width, row_blocks + 4); // Q (64 rows a row block) and two each of K, V
}
std::size_t backward_kv_shared(int width, int stages, int row_blocks) {
    return tiles_bytes(width, 2 * row_blocks + 2 * stages) +
           2 * stages * kTile * sizeof(float); // K, V (64 rows a row block); Q, dO, lse, D
}
std::size_t backward_q_shared(int width, int stages, int row_blocks) {
    return tiles_bytes(width, 2 * row_blocks + 2 * stages); // Q, dO; K, V
}

// The backward's stages: two where the device lets a block have their shared memory, else one.
// Every sm_80+ GPU lets it for the kernels sized for hd <= 64 (75 KB at most: mma_wide's dK/dV).
// For those sized for 128 (105 KB, at any hd from 80 to 128), an H100 does (227 KB), an sm_86/89
// GPU does not (99 KB).
int stages_for(std::size_t two_stage_bytes) {
    return two_stage_bytes <= shared_optin_bytes() ? 2 : 1;
}

} // namespace

// Runs f(regs, row_blocks), each a std::integral_constant, for one kernel's template arguments in
// `form`: its row operands in registers, its 16-row blocks per warp. At hd 128 neither the regs nor
// the wide form fits (mma_variants_fit): the row operands would take 32 more registers a thread
// than the dK/dV kernel's 253 leave (ptxas, sm_90), a second row block 64 more accumulators.
template <int kMaxHd, typename F>
void with_form(MmaForm form, F&& f) {
    using No = std::false_type;
    using Yes = std::true_type;
    using One = std::integral_constant<int, 1>;
    using Two = std::integral_constant<int, 2>;
    if constexpr (kMaxHd == 64) {
        if (form == MmaForm::regs) return f(Yes{}, One{});
        if (form == MmaForm::wide) return f(No{}, Two{});
    }
    return f(No{}, One{});
}

// Runs f(stages) for the backward's buffers per streamed tile: two for the kernels sized for 64
// (every sm_80+ GPU has room, the wide dK/dV's 75 KB included); for those sized for 128, two where
// the device lets a block have them (stages_for), else one.
template <int kMaxHd, typename F>
void with_stages(F&& f) {
    using One = std::integral_constant<int, 1>;
    using Two = std::integral_constant<int, 2>;
    if constexpr (kMaxHd == 64) {
        return f(Two{});
    } else {
        if (stages_for(
                std::max(backward_kv_shared(kMaxHd, 2, 1), backward_q_shared(kMaxHd, 2, 1))) == 1)
            return f(One{});
        return f(Two{});
    }
}

void flash_attention_mma_forward(cudaStream_t s, void* out, float* lse, const void* qkv, int B,
                                 int T, int C, int H, int Hkv, DType t, MmaForm form) {
    const int hd = C / H;
    const float scale = 1.0f / std::sqrt(float(hd));
    dispatch_tensor_cores(t, hd, "flash attention on mma.sync", [&](auto tag, auto max_hd) {
        using P = typename decltype(tag)::type;
        constexpr int kMaxHd = decltype(max_hd)::value;
        with_form<kMaxHd>(form, [&](auto regs, auto row_blocks) {
            constexpr int kR = decltype(row_blocks)::value;
            const dim3 grid(blocks_for(std::size_t(T), kTile * kR), unsigned(H), unsigned(B));
            launch_with_shared("flash_attention_mma_forward",
                               mma_forward_kernel<kMaxHd, decltype(regs)::value, kR, P>, grid,
                               kThreads, forward_shared(kMaxHd, kR), s, static_cast<P*>(out), lse,
                               static_cast<const P*>(qkv), T, C, H, Hkv, scale);
        });
    });
}

void flash_attention_mma_backward(cudaStream_t s, void* dqkv, const void* dout, const void* qkv,
                                  const float* lse, const float* row_dots, int B, int T, int C,
                                  int H, int Hkv, DType t, MmaForm kv, MmaForm q) {
    const int hd = C / H;
    const float scale = 1.0f / std::sqrt(float(hd));
    dispatch_tensor_cores(t, hd, "flash attention on mma.sync", [&](auto tag, auto max_hd) {
        using P = typename decltype(tag)::type;
        constexpr int kMaxHd = decltype(max_hd)::value;
        const P* d = static_cast<const P*>(dout);
        const P* x = static_cast<const P*>(qkv);
        with_stages<kMaxHd>([&](auto staged) {
            constexpr int kStages = decltype(staged)::value;
            with_form<kMaxHd>(kv, [&](auto regs, auto row_blocks) {
                constexpr int kR = decltype(row_blocks)::value;
                // A kv head's whole group a block.
                const dim3 grid(blocks_for(std::size_t(T), kTile * kR), unsigned(Hkv), unsigned(B));
                launch_with_shared(
                    "flash_attention_mma_backward_kv",
                    mma_backward_kv_kernel<kMaxHd, decltype(regs)::value, kR, kStages, P>, grid,
                    kThreads, backward_kv_shared(kMaxHd, kStages, kR), s, static_cast<P*>(dqkv), d,
                    x, lse, row_dots, T, C, H, Hkv, scale);
            });
            with_form<kMaxHd>(q, [&](auto regs, auto row_blocks) {
                constexpr int kR = decltype(row_blocks)::value;
                const dim3 grid(blocks_for(std::size_t(T), kTile * kR), unsigned(H), unsigned(B));
                launch_with_shared(
                    "flash_attention_mma_backward_q",
                    mma_backward_q_kernel<kMaxHd, decltype(regs)::value, kR, kStages, P>, grid,
                    kThreads, backward_q_shared(kMaxHd, kStages, kR), s, static_cast<P*>(dqkv), d,
                    x, lse, row_dots, T, C, H, Hkv, scale);
            });
        });
    });
}

} // namespace shardlab::cuda
