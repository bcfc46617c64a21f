// Flash attention's tensor-core kernels: the design is explained in flash_attention_wmma.h. Within
// a warp, lane l owns row l / 2 of the warp's 16 rows and, of that row's columns, those of parity
// l % 2 (c = l % 2 + 2 k): so a row's reductions are one shuffle, and the two lanes of a row read
// adjacent words of the scratch. Each kernel is a template on the largest head dim it serves
// (64 or 128), which sizes its register arrays; loops over head-dim blocks are unrolled to that
// bound so that fragment arrays are indexed by constants (registers, not local memory).
#include "model/kernels/cuda/flash_attention_common.h"
#include "model/kernels/cuda/flash_attention_wmma.h"
#include "model/kernels/cuda/qkv_layout.h"

#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/cuda/unroll.h"
#include "core/error.h"

#include <mma.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace shardlab::cuda {

namespace {
namespace wmma = nvcuda::wmma;

constexpr int kTile = kFlashWmmaTile; // rows of a block's query or key tile
constexpr int kWarps = 4;             // each owns kFrag rows of the tile
constexpr int kFrag = 16;             // WMMA's m = n = k
constexpr int kThreads = kWarps * 32; // 128
constexpr int kSub = kTile / kFrag;   // 16-column blocks of a score tile: 4
constexpr int kPitch16 = kTile + 8;   // a warp's P / dS row: 72 elements (144 B)
constexpr int kRowCols = kTile / 2;   // a lane's columns of a score row: 32
constexpr std::size_t kAlign = 128;   // the shared base, rounded up (WMMA needs 32 bytes)

using Acc = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;
template <typename T>
using RowA = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, T, wmma::row_major>;
template <typename T>
using RowB = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::row_major>;
template <typename T>
using ColB = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::col_major>;

__host__ __device__ inline int tiles(int T) {
    return (T + kTile - 1) / kTile;
}
// Element pitches: a 16-bit tile row (16-byte multiple for WMMA's ldm, 4 banks of shift per row)
// and a warp's fp32 scratch row (wide enough for a score row or an hd-wide product row).
__host__ __device__ inline int tile_pitch(int hd) {
    return hd + 8;
}
__host__ __device__ inline int scratch_pitch(int hd) {
    return (hd > kTile ? hd : kTile) + 4;
}

// The block's dynamic shared memory, its base rounded up to kAlign (the launch asks kAlign more).
__device__ inline unsigned char* shared_base() {
    SHARDLAB_DYNAMIC_SHARED(unsigned char, raw);
    const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(raw);
    return raw + ((kAlign - p % kAlign) % kAlign);
}

// A bump allocator over it: regions in order, each a multiple of 32 bytes long (so every region,
// and every 16-row or 16-column block of one, meets WMMA's 32-byte alignment).
struct Carve {
    unsigned char* at;
    template <typename E>
    __device__ E* take(std::size_t n) {
        E* r = reinterpret_cast<E*>(at);
        at += n * sizeof(E);
        return r;
    }
};

// Rows [r0, r0 + kTile) of a head's hd columns into `tile` (flash_attention_common.h).
template <int kMaxHd, typename T>
__device__ void load_tile(T* tile, const T* src, std::size_t stride, int r0, int T_, int hd) {
    load_tile16<kTile, kThreads, kMaxHd>(tile, tile_pitch(hd), src, stride, r0, T_, hd, hd);
}

// S (16 x kTile, fp32, into `scratch`) = A_w B^T over hd: A_w the warp's 16 rows of tile `a`
// (loaded once as hd / 16 fragments), B the rows of tile `b`; column blocks from `first` to
// `last` - 1 only (the rest are masked).
template <int kMaxHd, typename T>
__device__ void scores(float* scratch, const T* a_rows, const T* b, int hd, int first, int last) {
    const int pitch = tile_pitch(hd);
    RowA<T> fa[kMaxHd / kFrag];
    SHARDLAB_UNROLL
    for (int k = 0; k < kMaxHd / kFrag; ++k)
        if (k * kFrag < hd) wmma::load_matrix_sync(fa[k], a_rows + k * kFrag, unsigned(pitch));
    for (int n = first; n < last; ++n) {
        Acc acc;
        wmma::fill_fragment(acc, 0.0f);
        SHARDLAB_UNROLL
        for (int k = 0; k < kMaxHd / kFrag; ++k) {
            if (k * kFrag >= hd) break;
            ColB<T> fb; // B^T's column-major view is B row-major
            wmma::load_matrix_sync(fb, b + n * kFrag * pitch + k * kFrag, unsigned(pitch));
            wmma::mma_sync(acc, fa[k], fb, acc);
        }
        wmma::store_matrix_sync(scratch + n * kFrag, acc, unsigned(scratch_pitch(hd)),
                                wmma::mem_row_major);
    }
}

// acc[n] (+)= P (16 x kTile, 16-bit, pitch kPitch16; loaded once as 4 fragments) times rows of
// tile `v` (kTile x hd), over the key blocks [first, last) (the others are zero in P), for every
// 16-column block n of hd.
template <int kMaxHd, typename T>
__device__ void product(Acc (&acc)[kMaxHd / kFrag], const T* p, const T* v, int hd, int first,
                        int last) {
    const int pitch = tile_pitch(hd);
    RowA<T> fp[kSub];
    SHARDLAB_UNROLL
    for (int k = 0; k < kSub; ++k)
        if (k >= first && k < last)
            wmma::load_matrix_sync(fp[k], p + k * kFrag, unsigned(kPitch16));
    SHARDLAB_UNROLL
    for (int n = 0; n < kMaxHd / kFrag; ++n) {
        if (n * kFrag >= hd) break;
        SHARDLAB_UNROLL
        for (int k = 0; k < kSub; ++k) {
            if (k < first || k >= last) continue;
            RowB<T> fb;
            wmma::load_matrix_sync(fb, v + k * kFrag * pitch + n * kFrag, unsigned(pitch));
            wmma::mma_sync(acc[n], fp[k], fb, acc[n]);
        }
    }
}

// Writes acc (16 x hd, times `scale`) as rows of dst (row stride `stride`, rows past T skipped),
// through the warp's scratch. The caller's lanes have passed a __syncwarp since they last read it
// (the one after their last dS writes).
template <int kMaxHd, typename T>
__device__ void write_rows(T* dst, std::size_t stride, int row0, int T_, Acc (&acc)[kMaxHd / kFrag],
                           float scale, float* scratch, int hd) {
    const int lane = int(threadIdx.x % 32), sp = scratch_pitch(hd);
    SHARDLAB_UNROLL
    for (int n = 0; n < kMaxHd / kFrag; ++n) {
        if (n * kFrag >= hd) break;
        for (int i = 0; i < acc[n].num_elements; ++i) acc[n].x[i] *= scale;
        wmma::store_matrix_sync(scratch + n * kFrag, acc[n], unsigned(sp), wmma::mem_row_major);
    }
    __syncwarp(); // every lane's share of the rows is in the scratch
    for (int i = lane; i < kFrag * hd; i += 32) {
        const int r = i / hd, c = i % hd;
        if (row0 + r < T_)
            dst[std::size_t(row0 + r) * stride + c] = from_f32<T>(scratch[r * sp + c]);
    }
    __syncwarp(); // read before the scratch is written again
}

// One block per (query tile, query head, batch).
template <int kMaxHd, typename T>
__global__ void __launch_bounds__(kThreads)
    wmma_forward_kernel(T* out, float* lse, const T* qkv, int T_, int C, int H, int Hkv,
                        float scale) {
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd, pitch = tile_pitch(hd), sp = scratch_pitch(hd);
    const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
    Carve carve{shared_base()};
    T* Qs = carve.take<T>(std::size_t(kTile) * pitch);
    T* Ks = carve.take<T>(std::size_t(kTile) * pitch);
    T* Vs = carve.take<T>(std::size_t(kTile) * pitch);
    float* S = carve.take<float>(std::size_t(kWarps) * kFrag * sp) + warp * kFrag * sp;
    T* P = carve.take<T>(std::size_t(kWarps) * kFrag * kPitch16) + warp * kFrag * kPitch16;
    const int qt = int(blockIdx.x), h = int(blockIdx.y), b = int(blockIdx.z);
    const int r = lane / 2, parity = lane % 2;
    const int q = qt * kTile + warp * kFrag + r; // this lane's query row
    const std::size_t stride = at.row();
    const T* rows = qkv + std::size_t(b) * T_ * stride;
    const T* kh = rows + at.k_col(at.kv_of(h)); // the kv head's k and v columns
    const T* vh = rows + at.v_col(at.kv_of(h));

    load_tile<kMaxHd>(Qs, rows + at.q_col(h), stride, qt * kTile, T_, hd);
    float m = -INFINITY, l = 0.0f;     // the row's running maximum and sum of e^(s - m), in fp32
    float o[kMaxHd / 2] = {};          // its output columns parity + 2 k, unnormalised
    for (int kt = 0; kt <= qt; ++kt) { // causal: no key tile after the diagonal one
        __syncthreads(); // everyone is done with the previous K, V tiles (and its scratch, P)
        load_tile<kMaxHd>(Ks, kh, stride, kt * kTile, T_, hd);
        load_tile<kMaxHd>(Vs, vh, stride, kt * kTile, T_, hd);
        __syncthreads(); // the K and V tiles (and the first time, Q) are complete
        // In the diagonal tile, key blocks after the warp's own rows are wholly masked.
        const int blocks = kt == qt ? warp + 1 : kSub;
        scores<kMaxHd>(S, Qs + warp * kFrag * pitch, Ks, hd, 0, blocks);
        __syncwarp(); // the warp's score tile is complete

        float s[kRowCols], tile_max = -INFINITY;
        for (int u = 0; u < kRowCols; ++u) {
            const int j = parity + 2 * u, key = kt * kTile + j;
            s[u] = key <= q && key < T_ ? scale * S[r * sp + j] : -INFINITY;
            tile_max = fmaxf(tile_max, s[u]);
        }
        const float m_new = fmaxf(m, fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1)));
        // A row's first key tile holds a key at or before it, so m_new is finite for a real row;
        // a padding row (q >= T) is finite too (keys 0..T-1 pass its mask). The guard keeps a fully
        // masked row at zeros rather than NaN.
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        const float rescale = expf(m - base); // what the sum and O so far were measured against
        float p_sum = 0;
        for (int u = 0; u < kRowCols; ++u) {
            const float p = expf(s[u] - base);
            p_sum += p; // l from the unrounded probabilities: normalisation is not rounded
            P[r * kPitch16 + parity + 2 * u] = from_f32<T>(p);
        }
        l = l * rescale + (p_sum + __shfl_xor_sync(0xffffffffu, p_sum, 1));
        m = m_new;
        __syncwarp(); // P is complete, and the scores are read: the scratch takes P V

        Acc pv[kMaxHd / kFrag];
        SHARDLAB_UNROLL
        for (int n = 0; n < kMaxHd / kFrag; ++n) wmma::fill_fragment(pv[n], 0.0f);
        product<kMaxHd>(pv, P, Vs, hd, 0, blocks);
        SHARDLAB_UNROLL
        for (int n = 0; n < kMaxHd / kFrag; ++n)
            if (n * kFrag < hd)
                wmma::store_matrix_sync(S + n * kFrag, pv[n], unsigned(sp), wmma::mem_row_major);
        __syncwarp(); // P V is complete in the scratch
        SHARDLAB_UNROLL
        for (int k = 0; k < kMaxHd / 2; ++k)
            if (parity + 2 * k < hd) o[k] = o[k] * rescale + S[r * sp + parity + 2 * k];
    }
    if (q >= T_) return; // a row past the end of the sequence (the last tile's padding)
    T* dst = out + (std::size_t(b) * T_ + q) * C + std::size_t(h) * hd;
    SHARDLAB_UNROLL
    for (int k = 0; k < kMaxHd / 2; ++k)
        if (parity + 2 * k < hd) dst[parity + 2 * k] = from_f32<T>(o[k] / l);
    if (parity == 0) lse[(std::size_t(b) * H + h) * T_ + q] = m + logf(l);
}

// dK, dV of one key tile: one block per (key tile, kv head, batch), walking, for each query head of
// the kv head's group in order, the query tiles from the diagonal one down (the group's sum stays
// in the accumulator fragments: one fixed sequence of mma_sync calls). A warp's rows are 16 keys;
// the columns of its score tile are queries (S^T = K Q^T, dP^T = V dO^T), so P^T and dS^T are
// matrix_a operands as they stand.
template <int kMaxHd, typename T>
__global__ void __launch_bounds__(kThreads)
    wmma_backward_kv_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D,
                            int T_, int C, int H, int Hkv, float scale) {
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd, pitch = tile_pitch(hd), sp = scratch_pitch(hd);
    const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
    Carve carve{shared_base()};
    T* Ks = carve.take<T>(std::size_t(kTile) * pitch);
    T* Vs = carve.take<T>(std::size_t(kTile) * pitch);
    T* Qs = carve.take<T>(std::size_t(kTile) * pitch);
    T* dOs = carve.take<T>(std::size_t(kTile) * pitch);
    float* S = carve.take<float>(std::size_t(kWarps) * kFrag * sp) + warp * kFrag * sp;
    T* Pt = carve.take<T>(std::size_t(kWarps) * kFrag * kPitch16) + warp * kFrag * kPitch16;
    T* dSt = carve.take<T>(std::size_t(kWarps) * kFrag * kPitch16) + warp * kFrag * kPitch16;
    float* Ls = carve.take<float>(kTile); // the query tile's lse
    float* Ds = carve.take<float>(kTile); // and D
    const int kt = int(blockIdx.x), g = int(blockIdx.y), b = int(blockIdx.z);
    const int r = lane / 2, parity = lane % 2;
    const int key = kt * kTile + warp * kFrag + r; // this lane's key row
    const std::size_t stride = at.row();
    const T* rows = qkv + std::size_t(b) * T_ * stride;
    const T* Kw = Ks + warp * kFrag * pitch;
    const T* Vw = Vs + warp * kFrag * pitch;

    load_tile<kMaxHd>(Ks, rows + at.k_col(g), stride, kt * kTile, T_, hd);
    load_tile<kMaxHd>(Vs, rows + at.v_col(g), stride, kt * kTile, T_, hd);
    Acc dk[kMaxHd / kFrag], dv[kMaxHd / kFrag];
    SHARDLAB_UNROLL
    for (int n = 0; n < kMaxHd / kFrag; ++n) {
        wmma::fill_fragment(dk[n], 0.0f);
        wmma::fill_fragment(dv[n], 0.0f);
    }
    // The group's heads in order, each one's query tiles from the diagonal one (causal) down: one
    // loop over the pairs, as in flash_attention.cu's kernel (fewer registers than nested loops).
    const int walk = tiles(T_) - kt;
    for (int step = 0; step < at.group() * walk; ++step) {
        const int h = g * at.group() + step / walk, qt = kt + step % walk;
        const std::size_t bh = std::size_t(b) * H + h;
        const T* dhead = dout + std::size_t(b) * T_ * C + std::size_t(h) * hd;
        __syncthreads(); // everyone is done with the previous Q, dO, lse, D tiles
        load_tile<kMaxHd>(Qs, rows + at.q_col(h), stride, qt * kTile, T_, hd);
        load_tile<kMaxHd>(dOs, dhead, std::size_t(C), qt * kTile, T_, hd);
        if (threadIdx.x < unsigned(kTile)) {
            const int qi = qt * kTile + int(threadIdx.x);
            Ls[threadIdx.x] = qi < T_ ? lse[bh * T_ + qi] : 0.0f;
            Ds[threadIdx.x] = qi < T_ ? D[bh * T_ + qi] : 0.0f;
        }
        __syncthreads(); // the tiles (and the first time, K and V) are complete
        // In the diagonal tile, query blocks before the warp's own keys are wholly masked.
        const int first = qt == kt ? warp : 0;
        scores<kMaxHd>(S, Kw, Qs, hd, first, kSub); // S^T
        __syncwarp();                               // the warp's S^T is complete
        float p[kRowCols];
        for (int u = 0; u < kRowCols; ++u) {
            const int i = parity + 2 * u, query = qt * kTile + i;
            p[u] = key <= query && query < T_ ? expf(scale * S[r * sp + i] - Ls[i]) : 0.0f;
            Pt[r * kPitch16 + i] = from_f32<T>(p[u]);
        }
        __syncwarp();                                // S^T is read: the scratch takes dP^T
        scores<kMaxHd>(S, Vw, dOs, hd, first, kSub); // dP^T
        __syncwarp();                                // the warp's dP^T is complete
        for (int u = 0; u < kRowCols; ++u) {
            // p is 0 where masked (and the scratch unwritten there)
            const int i = parity + 2 * u;
            dSt[r * kPitch16 + i] =
                from_f32<T>(p[u] == 0.0f ? 0.0f : p[u] * (S[r * sp + i] - Ds[i]));
        }
        __syncwarp(); // P^T and dS^T are complete
        product<kMaxHd>(dv, Pt, dOs, hd, first, kSub);
        product<kMaxHd>(dk, dSt, Qs, hd, first, kSub);
    }
    T* drows = dqkv + std::size_t(b) * T_ * stride;
    const int row0 = kt * kTile + warp * kFrag;
    write_rows<kMaxHd>(drows + at.k_col(g), stride, row0, T_, dk, scale, S, hd);
    write_rows<kMaxHd>(drows + at.v_col(g), stride, row0, T_, dv, 1.0f, S, hd);
}

// dQ of one query tile: one block per (query tile, head, batch), walking the key tiles up to the
// diagonal. A warp's rows are 16 queries, the columns of its score tile keys.
template <int kMaxHd, typename T>
__global__ void __launch_bounds__(kThreads)
    wmma_backward_q_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D,
                           int T_, int C, int H, int Hkv, float scale) {
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd, pitch = tile_pitch(hd), sp = scratch_pitch(hd);
    const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x % 32);
    Carve carve{shared_base()};
    T* Qs = carve.take<T>(std::size_t(kTile) * pitch);
    T* dOs = carve.take<T>(std::size_t(kTile) * pitch);
    T* Ks = carve.take<T>(std::size_t(kTile) * pitch);
    T* Vs = carve.take<T>(std::size_t(kTile) * pitch);
    float* S = carve.take<float>(std::size_t(kWarps) * kFrag * sp) + warp * kFrag * sp;
    T* dS = carve.take<T>(std::size_t(kWarps) * kFrag * kPitch16) + warp * kFrag * kPitch16;
    const int qt = int(blockIdx.x), h = int(blockIdx.y), b = int(blockIdx.z);
    const int r = lane / 2, parity = lane % 2;
    const int query = qt * kTile + warp * kFrag + r; // this lane's query row
    const std::size_t stride = at.row(), bh = std::size_t(b) * H + h;
    const T* rows = qkv + std::size_t(b) * T_ * stride;
    const T* kh = rows + at.k_col(at.kv_of(h)); // the kv head's k and v columns
    const T* vh = rows + at.v_col(at.kv_of(h));
    const T* dhead = dout + std::size_t(b) * T_ * C + std::size_t(h) * hd;

    load_tile<kMaxHd>(Qs, rows + at.q_col(h), stride, qt * kTile, T_, hd);
    load_tile<kMaxHd>(dOs, dhead, std::size_t(C), qt * kTile, T_, hd);
    const float row_lse = query < T_ ? lse[bh * T_ + query] : 0.0f;
    const float row_D = query < T_ ? D[bh * T_ + query] : 0.0f;
    Acc dq[kMaxHd / kFrag];
    SHARDLAB_UNROLL
    for (int n = 0; n < kMaxHd / kFrag; ++n) wmma::fill_fragment(dq[n], 0.0f);
    for (int kt = 0; kt <= qt; ++kt) {
        __syncthreads(); // everyone is done with the previous K and V tiles
        load_tile<kMaxHd>(Ks, kh, stride, kt * kTile, T_, hd);
        load_tile<kMaxHd>(Vs, vh, stride, kt * kTile, T_, hd);
        __syncthreads(); // the K and V tiles (and the first time, Q and dO) are complete
        const int blocks = kt == qt ? warp + 1 : kSub;
        scores<kMaxHd>(S, Qs + warp * kFrag * pitch, Ks, hd, 0, blocks); // S
        __syncwarp();                                                    // the warp's S is complete
        float p[kRowCols];
        for (int u = 0; u < kRowCols; ++u) {
            const int key = kt * kTile + parity + 2 * u;
            p[u] = key <= query && query < T_ ? expf(scale * S[r * sp + parity + 2 * u] - row_lse)
                                              : 0.0f;
        }
        __syncwarp(); // S is read: the scratch takes dP
        scores<kMaxHd>(S, dOs + warp * kFrag * pitch, Vs, hd, 0, blocks); // dP = dO V^T
        __syncwarp(); // the warp's dP is complete
        for (int u = 0; u < kRowCols; ++u) {
            const int j = parity + 2 * u;
            dS[r * kPitch16 + j] =
                from_f32<T>(p[u] == 0.0f ? 0.0f : p[u] * (S[r * sp + j] - row_D));
        }
        __syncwarp(); // dS is complete
        product<kMaxHd>(dq, dS, Ks, hd, 0, blocks);
    }
    T* dQ = dqkv + std::size_t(b) * T_ * stride + at.q_col(h);
    write_rows<kMaxHd>(dQ, stride, qt * kTile + warp * kFrag, T_, dq, scale, S, hd);
}

// The shared bytes of each kernel for head dim hd (the carve order above, plus the alignment).
std::size_t tiles_bytes(int hd, int n) {
    return std::size_t(n) * kTile * tile_pitch(hd) * 2; // 16-bit tiles
}
std::size_t scratch_bytes(int hd) {
    return sizeof(float) * kWarps * kFrag * std::size_t(scratch_pitch(hd));
}
constexpr std::size_t kPBytes = std::size_t(2) * kWarps * kFrag * kPitch16; // one 16-bit P tile
std::size_t forward_shared(int hd) {
    return kAlign + tiles_bytes(hd, 3) + scratch_bytes(hd) + kPBytes;
}
std::size_t backward_kv_shared(int hd) {
    return kAlign + tiles_bytes(hd, 4) + scratch_bytes(hd) + 2 * kPBytes +
           2 * kTile * sizeof(float);
}
std::size_t backward_q_shared(int hd) {
    return kAlign + tiles_bytes(hd, 4) + scratch_bytes(hd) + kPBytes;
}

} // namespace

void flash_attention_wmma_forward(cudaStream_t s, void* out, float* lse, const void* qkv, int B,
                                  int T, int C, int H, int Hkv, DType t) {
    const int hd = C / H;
    const float scale = 1.0f / std::sqrt(float(hd));
    const dim3 grid(unsigned(tiles(T)), unsigned(H), unsigned(B));
    dispatch_tensor_cores(t, hd, "flash attention on tensor cores", [&](auto tag, auto max_hd) {
        using P = typename decltype(tag)::type;
        launch_with_shared("flash_attention_wmma_forward",
                           wmma_forward_kernel<decltype(max_hd)::value, P>, grid, kThreads,
                           forward_shared(hd), s, static_cast<P*>(out), lse,
                           static_cast<const P*>(qkv), T, C, H, Hkv, scale);
    });
}

void flash_attention_wmma_backward(cudaStream_t s, void* dqkv, const void* dout, const void* qkv,
                                   const float* lse, const float* row_dots, int B, int T, int C,
                                   int H, int Hkv, DType t) {
    const int hd = C / H;
    const float scale = 1.0f / std::sqrt(float(hd));
    const dim3 q_grid(unsigned(tiles(T)), unsigned(H), unsigned(B));
    const dim3 kv_grid(unsigned(tiles(T)), unsigned(Hkv), unsigned(B)); // a kv head's whole group
    dispatch_tensor_cores(t, hd, "flash attention on tensor cores", [&](auto tag, auto max_hd) {
        using P = typename decltype(tag)::type;
        const P* d = static_cast<const P*>(dout);
        const P* x = static_cast<const P*>(qkv);
        launch_with_shared("flash_attention_wmma_backward_kv",
                           wmma_backward_kv_kernel<decltype(max_hd)::value, P>, kv_grid, kThreads,
                           backward_kv_shared(hd), s, static_cast<P*>(dqkv), d, x, lse, row_dots, T,
                           C, H, Hkv, scale);
        launch_with_shared("flash_attention_wmma_backward_q",
                           wmma_backward_q_kernel<decltype(max_hd)::value, P>, q_grid, kThreads,
                           backward_q_shared(hd), s, static_cast<P*>(dqkv), d, x, lse, row_dots, T,
                           C, H, Hkv, scale);
    });
}

} // namespace shardlab::cuda
