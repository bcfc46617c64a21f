// Flash attention, forward and backward: the tiling is explained in flash_attention.h. Threads of a
// block: 32 tile rows of 8 consecutive lanes each (so a row's threads are lanes of one warp: its
// reductions are shuffles within the 8 lanes, and its P row is shared with a __syncwarp). Within a
// row, lane l computes the scores of columns l, l + 8, l + 16, l + 24 of the tile, and owns the
// output columns l, l + 8, l + 16, ... of the head dim.
#include "model/kernels/cuda/flash_attention.h"

#include "model/kernels/cuda/flash_attention_common.h"
#include "model/kernels/cuda/flash_attention_mma.h"
#include "model/kernels/cuda/flash_attention_path.h"
#include "model/kernels/cuda/flash_attention_wmma.h"
#include "model/kernels/cuda/qkv_layout.h"

#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/error.h"
#include "model/kernels/cuda/warp_reduce.h"

#include <cmath>
#include <string>
#include <utility>

namespace shardlab::cuda {

namespace {
constexpr int kTile = kFlashTile;
constexpr int kLanes = 8;                           // threads per tile row
constexpr int kThreads = kTile * kLanes;            // 256
constexpr int kScoresPerLane = kTile / kLanes;      // 4 of a row's 32 scores per thread
constexpr int kMaxCols = kFlashMaxHeadDim / kLanes; // a thread's columns of an output row
constexpr int kPStride = kTile + 1;                 // a P or dS row, padded against bank conflicts

__host__ __device__ inline int tiles(int T) {
    return (T + kTile - 1) / kTile;
}

// Loads rows [r0, r0 + kTile) of a head's columns (hd of them, row stride `stride` elements) into
// `tile` (row stride hd + 1) as fp32; rows past T are zero. All threads of the block take part.
template <typename T>
__device__ void load_tile(float* tile, const T* src, std::size_t stride, int r0, int T_, int hd) {
    for (int i = int(threadIdx.x); i < kTile * hd; i += kThreads) {
        const int r = i / hd, c = i % hd;
        tile[r * (hd + 1) + c] = r0 + r < T_ ? to_f32(src[std::size_t(r0 + r) * stride + c]) : 0.0f;
    }
}

__device__ __forceinline__ float dot(const float* a, const float* b, int n) {
    float s = 0;
    for (int i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

// Over the 8 lanes of a tile row (xor offsets below 8 stay inside the row's group of lanes).
__device__ __forceinline__ float row_max(float v) {
    for (int offset = kLanes / 2; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}
__device__ __forceinline__ float row_sum(float v) {
    for (int offset = kLanes / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// One block per (query tile, head, batch): see flash_attention.h.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(T* out, float* lse, const T* qkv, int T_, int C, int H, int Hkv,
                         float scale) {
    SHARDLAB_DYNAMIC_SHARED(float, smem);
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd, ld = hd + 1;
    float* Qs = smem;            // [kTile][ld]
    float* Ks = Qs + kTile * ld; // [kTile][ld]
    float* Vs = Ks + kTile * ld; // [kTile][ld]
    float* Ps = Vs + kTile * ld; // [kTile][kPStride]
    const int qt = int(blockIdx.x), h = int(blockIdx.y), b = int(blockIdx.z);
    const int row = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
    const int q = qt * kTile + row; // this thread's query position
    const std::size_t stride = at.row();
    const T* rows = qkv + std::size_t(b) * T_ * stride;
    const T* kh = rows + at.k_col(at.kv_of(h)); // the kv head's k and v columns
    const T* vh = rows + at.v_col(at.kv_of(h));

    load_tile(Qs, rows + at.q_col(h), stride, qt * kTile, T_, hd);
    float m = -INFINITY, l = 0.0f;     // the row's running maximum and sum of e^(s - m)
    float o[kMaxCols] = {};            // its output columns lane, lane + 8, ... unnormalised
    for (int kt = 0; kt <= qt; ++kt) { // causal: no key tile after the diagonal one
        __syncthreads();               // everyone is done reading the previous K, V and P tiles
        load_tile(Ks, kh, stride, kt * kTile, T_, hd);
        load_tile(Vs, vh, stride, kt * kTile, T_, hd);
        __syncthreads(); // the K and V tiles (and the first time, Q) are complete

        float s[kScoresPerLane], tile_max = -INFINITY;
        for (int u = 0; u < kScoresPerLane; ++u) {
            const int j = lane + kLanes * u, key = kt * kTile + j;
            s[u] = key <= q && key < T_ ? scale * dot(Qs + row * ld, Ks + j * ld, hd) : -INFINITY;
            tile_max = fmaxf(tile_max, s[u]);
        }
        const float m_new = fmaxf(m, row_max(tile_max));
        // Every tile row sees a key at or before it in its first key tile, so m_new is finite;
        // exponentiating against 0 instead keeps a fully masked row at zeros rather than NaN.
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        const float rescale = expf(m - base); // what the sum and O so far were measured against
        float p[kScoresPerLane], p_sum = 0;
        for (int u = 0; u < kScoresPerLane; ++u) {
            p[u] = expf(s[u] - base);
            p_sum += p[u];
        }
        l = l * rescale + row_sum(p_sum);
        m = m_new;
        for (int u = 0; u < kScoresPerLane; ++u) Ps[row * kPStride + lane + kLanes * u] = p[u];
        __syncwarp(); // the row's P is complete: its 8 threads are lanes of this warp

        for (int k = 0; k < kMaxCols; ++k) o[k] *= rescale;
        for (int j = 0; j < kTile; ++j) {
            const float pj = Ps[row * kPStride + j];
            const float* v = Vs + j * ld;
            for (int k = 0; k < kMaxCols; ++k)
                if (lane + kLanes * k < hd) o[k] += pj * v[lane + kLanes * k];
        }
    }
    if (q >= T_) return; // a row past the end of the sequence (the last tile's padding)
    T* dst = out + (std::size_t(b) * T_ + q) * C + std::size_t(h) * hd;
    for (int k = 0; k < kMaxCols; ++k)
        if (lane + kLanes * k < hd) dst[lane + kLanes * k] = from_f32<T>(o[k] / l);
    if (lane == 0) lse[(std::size_t(b) * H + h) * T_ + q] = m + logf(l);
}

// D [B, H, T] = rowsum(dO * O) per head: the softmax backward's sum_j P_ij dP_ij, since
// sum_j P_ij (dO_i . V_j) = dO_i . O_i. One warp per (batch, position, head).
constexpr unsigned kDotWarps = 8;
template <typename T>
__global__ void row_dots_kernel(float* D, const T* dout, const T* out, std::size_t rows, int T_,
                                int C, int H) {
    const std::size_t r = std::size_t(blockIdx.x) * kDotWarps + threadIdx.x / 32;
    const int lane = int(threadIdx.x % 32);
    if (r >= rows) return;
    const int hd = C / H, h = int(r % std::size_t(H));
    const std::size_t bt = r / std::size_t(H); // b * T + t
    const T* a = dout + bt * C + std::size_t(h) * hd;
    const T* o = out + bt * C + std::size_t(h) * hd;
    float sum = 0;
    for (int c = lane; c < hd; c += 32) sum += to_f32(a[c]) * to_f32(o[c]);
    sum = warp_sum(sum);
    const std::size_t b = bt / std::size_t(T_), t = bt % std::size_t(T_);
    if (lane == 0) D[(b * H + std::size_t(h)) * T_ + t] = sum;
}

// dK, dV of one key tile: one block per (key tile, kv head, batch), walking, for each query head
// of the kv head's group in order, the query tiles from the diagonal one down. A thread's row is a
// key; its 4 columns of the P and dS tiles are queries.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    flash_backward_kv_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D,
                             int T_, int C, int H, int Hkv, float scale) {
    SHARDLAB_DYNAMIC_SHARED(float, smem);
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd, ld = hd + 1;
    float* Ks = smem;                   // [kTile][ld]
    float* Vs = Ks + kTile * ld;        // [kTile][ld]
    float* Qs = Vs + kTile * ld;        // [kTile][ld]
    float* dOs = Qs + kTile * ld;       // [kTile][ld]
    float* Ps = dOs + kTile * ld;       // [kTile keys][kPStride queries]
    float* dSs = Ps + kTile * kPStride; // [kTile keys][kPStride queries]
    float* Ls = dSs + kTile * kPStride; // the query tile's lse [kTile]
    float* Ds = Ls + kTile;             // and D [kTile]
    const int kt = int(blockIdx.x), g = int(blockIdx.y), b = int(blockIdx.z);
    const int row = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
    const int key = kt * kTile + row;
    const std::size_t stride = at.row();
    const T* rows = qkv + std::size_t(b) * T_ * stride;

    load_tile(Ks, rows + at.k_col(g), stride, kt * kTile, T_, hd);
    load_tile(Vs, rows + at.v_col(g), stride, kt * kTile, T_, hd);
    float dk[kMaxCols] = {}, dv[kMaxCols] = {};
    // The group's query heads in order, each one's tiles in order: a fixed sequence of additions.
    // One loop over (head, query tile) pairs rather than two nested ones: the same order, and nvcc
    // 13 keeps this kernel at 79 registers (3 blocks per SM) where the nested form took 128.
    const int walk = tiles(T_) - kt; // causal: no query tile before the diagonal one
    for (int step = 0; step < at.group() * walk; ++step) {
        const int h = g * at.group() + step / walk, qt = kt + step % walk;
        const std::size_t bh = std::size_t(b) * H + h;
        const T* dhead = dout + std::size_t(b) * T_ * C + std::size_t(h) * hd;
        __syncthreads(); // everyone is done reading the previous Q, dO, P and dS tiles
        load_tile(Qs, rows + at.q_col(h), stride, qt * kTile, T_, hd);
        load_tile(dOs, dhead, std::size_t(C), qt * kTile, T_, hd);
        if (threadIdx.x < unsigned(kTile)) {
            const int qi = qt * kTile + int(threadIdx.x);
            Ls[threadIdx.x] = qi < T_ ? lse[bh * T_ + qi] : 0.0f;
            Ds[threadIdx.x] = qi < T_ ? D[bh * T_ + qi] : 0.0f;
        }
        __syncthreads(); // the tiles (and the first time, K and V) are complete

        for (int u = 0; u < kScoresPerLane; ++u) {
            const int i = lane + kLanes * u, query = qt * kTile + i;
            float p = 0, dp = 0; // P and dP = dO V^T of (query, key), zero where masked
            if (key <= query && query < T_) {
                p = expf(scale * dot(Qs + i * ld, Ks + row * ld, hd) - Ls[i]);
                dp = dot(dOs + i * ld, Vs + row * ld, hd);
            }
            Ps[row * kPStride + i] = p;
            dSs[row * kPStride + i] = p * (dp - Ds[i]);
        }
        __syncwarp(); // the row's P and dS are complete: its 8 threads are lanes of this warp

        for (int i = 0; i < kTile; ++i) {
            const float p = Ps[row * kPStride + i], ds = dSs[row * kPStride + i];
            const float* dO = dOs + i * ld;
            const float* Q = Qs + i * ld;
            for (int k = 0; k < kMaxCols; ++k)
                if (lane + kLanes * k < hd) {
                    dv[k] += p * dO[lane + kLanes * k];
                    dk[k] += ds * Q[lane + kLanes * k];
                }
        }
    }
    if (key >= T_) return;
    T* dK = dqkv + (std::size_t(b) * T_ + key) * stride + at.k_col(g);
    T* dV = dqkv + (std::size_t(b) * T_ + key) * stride + at.v_col(g);
    for (int k = 0; k < kMaxCols; ++k)
        if (lane + kLanes * k < hd) {
            dK[lane + kLanes * k] = from_f32<T>(dk[k] * scale);
            dV[lane + kLanes * k] = from_f32<T>(dv[k]);
        }
}

// dQ of one query tile: one block per (query tile, head, batch), walking the key tiles up to the
// diagonal. A thread's row is a query; its 4 columns of the dS tile are keys.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    flash_backward_q_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* D,
                            int T_, int C, int H, int Hkv, float scale) {
    SHARDLAB_DYNAMIC_SHARED(float, smem);
    const QkvLayout at{C / H, H, Hkv};
    const int hd = at.hd, ld = hd + 1;
    float* Qs = smem;             // [kTile][ld]
    float* dOs = Qs + kTile * ld; // [kTile][ld]
    float* Ks = dOs + kTile * ld; // [kTile][ld]
    float* Vs = Ks + kTile * ld;  // [kTile][ld]
    float* dSs = Vs + kTile * ld; // [kTile queries][kPStride keys]
    const int qt = int(blockIdx.x), h = int(blockIdx.y), b = int(blockIdx.z);
    const int row = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
    const int query = qt * kTile + row;
    const std::size_t stride = at.row(), bh = std::size_t(b) * H + h;
    const T* rows = qkv + std::size_t(b) * T_ * stride;
    const T* kh = rows + at.k_col(at.kv_of(h)); // the kv head's k and v columns
    const T* vh = rows + at.v_col(at.kv_of(h));
    const T* dhead = dout + std::size_t(b) * T_ * C + std::size_t(h) * hd;

    load_tile(Qs, rows + at.q_col(h), stride, qt * kTile, T_, hd);
    load_tile(dOs, dhead, std::size_t(C), qt * kTile, T_, hd);
    const float row_lse = query < T_ ? lse[bh * T_ + query] : 0.0f;
    const float row_D = query < T_ ? D[bh * T_ + query] : 0.0f;
    float dq[kMaxCols] = {};
    for (int kt = 0; kt <= qt; ++kt) {
        __syncthreads(); // everyone is done reading the previous K, V and dS tiles
        load_tile(Ks, kh, stride, kt * kTile, T_, hd);
        load_tile(Vs, vh, stride, kt * kTile, T_, hd);
        __syncthreads(); // the K and V tiles (and the first time, Q and dO) are complete

        for (int u = 0; u < kScoresPerLane; ++u) {
            const int j = lane + kLanes * u, key = kt * kTile + j;
            float ds = 0;
            if (key <= query && query < T_) {
                const float p = expf(scale * dot(Qs + row * ld, Ks + j * ld, hd) - row_lse);
                ds = p * (dot(dOs + row * ld, Vs + j * ld, hd) - row_D);
            }
            dSs[row * kPStride + j] = ds;
        }
        __syncwarp(); // the row's dS is complete: its 8 threads are lanes of this warp

        for (int j = 0; j < kTile; ++j) {
            const float ds = dSs[row * kPStride + j];
            const float* K = Ks + j * ld;
            for (int k = 0; k < kMaxCols; ++k)
                if (lane + kLanes * k < hd) dq[k] += ds * K[lane + kLanes * k];
        }
    }
    if (query >= T_) return;
    T* dQ = dqkv + (std::size_t(b) * T_ + query) * stride + at.q_col(h);
    for (int k = 0; k < kMaxCols; ++k)
        if (lane + kLanes * k < hd) dQ[lane + kLanes * k] = from_f32<T>(dq[k] * scale);
}

// The shared bytes of each kernel, for head dim hd.
std::size_t forward_shared(int hd) {
    return sizeof(float) * (std::size_t(3) * kTile * (hd + 1) + kTile * kPStride);
}
std::size_t backward_kv_shared(int hd) {
    return sizeof(float) *
           (std::size_t(4) * kTile * (hd + 1) + std::size_t(2) * kTile * kPStride + 2 * kTile);
}
std::size_t backward_q_shared(int hd) {
    return sizeof(float) * (std::size_t(4) * kTile * (hd + 1) + kTile * kPStride);
}

// The head dim, or the reason it cannot run here.
int head_dim(int C, int H, int Hkv) {
    check(H > 0 && C % H == 0, "flash attention: the width C = " + std::to_string(C) +
                                   " is not a multiple of the " + std::to_string(H) + " heads");
    check(Hkv > 0 && H % Hkv == 0, "flash attention: " + std::to_string(Hkv) +
                                       " kv heads do not divide the " + std::to_string(H) +
                                       " query heads");
    const int hd = C / H;
    if (hd > kFlashMaxHeadDim)
        throw Error("flash attention: head dim " + std::to_string(hd) +
                    " is over the CUDA "
                    "kernel's limit of " +
                    std::to_string(kFlashMaxHeadDim) +
                    " (its per-thread registers and shared-memory tiles are sized for it); use "
                    "--attention materialize for this model");
    return hd;
}

} // namespace

void flash_attention_forward(cudaStream_t s, void* out, float* lse, const void* qkv, int B, int T,
                             int C, int H, int Hkv, DType t, FlashKernels k) {
    const int hd = head_dim(C, H, Hkv);
    if (B == 0 || T == 0) return;
    if (flash_attention_on_tensor_cores(t, hd))
        return k.wmma
                   ? flash_attention_wmma_forward(s, out, lse, qkv, B, T, C, H, Hkv, t)
                   : flash_attention_mma_forward(s, out, lse, qkv, B, T, C, H, Hkv, t, k.forward);
    const float scale = 1.0f / std::sqrt(float(hd));
    const dim3 grid(unsigned(tiles(T)), unsigned(H), unsigned(B));
    dispatch(t, [&](auto tag) {
        using P = typename decltype(tag)::type;
        launch_with_shared("flash_attention_forward", flash_forward_kernel<P>, grid, kThreads,
                           forward_shared(hd), s, static_cast<P*>(out), lse,
                           static_cast<const P*>(qkv), T, C, H, Hkv, scale);
    });
}

void flash_attention_backward(cudaStream_t s, void* dqkv, const void* dout, const void* qkv,
                              const void* out, const float* lse, int B, int T, int C, int H,
                              int Hkv, DType t, FlashKernels k, float* row_dots) {
    const int hd = head_dim(C, H, Hkv);
    if (B == 0 || T == 0) return;
    const float scale = 1.0f / std::sqrt(float(hd));
    const std::size_t rows = std::size_t(B) * T * H;
    const dim3 q_grid(unsigned(tiles(T)), unsigned(H), unsigned(B));
    const dim3 kv_grid(unsigned(tiles(T)), unsigned(Hkv), unsigned(B)); // a kv head's whole group
    dispatch(t, [&](auto tag) {
        using P = typename decltype(tag)::type;
        const P* o = static_cast<const P*>(out);
        const P* d = static_cast<const P*>(dout);
        const P* x = static_cast<const P*>(qkv);
        launch("flash_attention_row_dots", row_dots_kernel<P>, blocks_for(rows, kDotWarps),
               kDotWarps * 32, 0, s, row_dots, d, o, rows, T, C, H);
        if (flash_attention_on_tensor_cores(t, hd))
            return k.wmma ? flash_attention_wmma_backward(s, dqkv, dout, qkv, lse, row_dots, B, T,
                                                          C, H, Hkv, t)
                          : flash_attention_mma_backward(s, dqkv, dout, qkv, lse, row_dots, B, T, C,
                                                         H, Hkv, t, k.kv, k.q);
        launch_with_shared("flash_attention_backward_kv", flash_backward_kv_kernel<P>, kv_grid,
                           kThreads, backward_kv_shared(hd), s, static_cast<P*>(dqkv), d, x, lse,
                           static_cast<const float*>(row_dots), T, C, H, Hkv, scale);
        launch_with_shared("flash_attention_backward_q", flash_backward_q_kernel<P>, q_grid,
                           kThreads, backward_q_shared(hd), s, static_cast<P*>(dqkv), d, x, lse,
                           static_cast<const float*>(row_dots), T, C, H, Hkv, scale);
    });
}

} // namespace shardlab::cuda
