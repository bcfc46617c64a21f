// Flash attention (FlashAttention-2's scheme) for causal attention over qkv [B, T, (H + 2 Hkv) hd]
// (grouped-query: rows [q: H hd | k: Hkv hd | v: Hkv hd], query head h reading kv head
// h / (H / Hkv), qkv_layout.h; Hkv == H is multi-head attention's [B, T, 3C]): the T x T scores and
// probabilities live only in shared-memory tiles of kFlashTile x kFlashTile, never in global
// memory. What is kept for backward is one fp32 number per query row, the log-sum-exp of its scaled
// scores, from which any tile of probabilities is recomputed exactly.
//
// These launchers serve every dtype and head dim; bf16 and fp16 with a head dim that is a multiple
// of 16 go on to the tensor-core kernels, those of flash_attention_mma.h or, when asked, WMMA's of
// flash_attention_wmma.h (the rule: flash_attention_path.h). What follows describes the fp32
// CUDA-core kernels, which take the rest.
//
// The tiling (kFlashTile = 32 rows, 256 threads per block: 8 threads per row of a tile):
//
//   forward   one block per (query tile, head, batch). Its Q tile is loaded once into shared
//   memory;
//             then the block walks the key/value tiles from the first to the diagonal one (tiles
//             above the diagonal are skipped: causal). Per tile: S = scale Q K^T, each of a row's
//             8 threads computing 4 of its 32 scores; the row's running maximum m and running sum
//             l are updated online (l = l e^(m_old - m_new) + sum e^(s - m_new), the O row rescaled
//             by the same factor), P goes through shared memory to the row's threads, and O += P V,
//             each thread owning every 8th column of its row's O in fp32 registers. At the end
//             O / l is written once (rounded once to the storage dtype) and lse = m + log l.
//   backward  D = rowsum(dO * O) [B, H, T] first (flash_attention_row_dots). Then two kernels, each
//             output element summed by one thread in a fixed order, so no atomics and the same
//             bits on every run (what ZeRO's bitwise promise between stages needs):
//             - per (key tile, kv head, batch): K, V tiles in shared memory; for each query head
//               of the kv head's group in order, walk the query tiles from the diagonal one to
//               the last; recompute P = e^(scale Q K^T - lse) and dS = P (dO V^T - D);
//               dV += P^T dO, dK += dS^T Q (times the scale at the end): the group's sum is one
//               thread's fixed sequence of additions, as the tiles' is.
//             - per (query tile, head, batch): Q, dO tiles in shared memory; walk the key tiles up
//               to the diagonal; recompute dS the same way; dQ += dS K (times the scale).
//
// Tiles are held in fp32 in shared memory whatever the storage dtype (converted on load), every
// sum in fp32. Shared memory per block, for head dim hd (tile rows padded to hd + 1 floats against
// bank conflicts): forward Q, K, V tiles + P = 4 (96 (hd + 1) + 1056) bytes: 29,184 at hd 64,
// 53,760 at 128; backward's dK/dV kernel K, V, Q, dO tiles + P, dS + lse, D: 41,984 at hd 64,
// 74,752 at 128; its dQ kernel 37,504 and 70,272. Above 48 KiB the launchers opt in through
// cudaFuncSetAttribute. Head dims up to kFlashMaxHeadDim; larger ones are refused.
// Included by .cu files only.
#pragma once

#include "core/dtype.h"
#include "model/kernels/cuda/flash_attention_path.h"

#include <cuda_runtime.h>

namespace shardlab::cuda {

constexpr int kFlashTile = 32;
constexpr int kFlashMaxHeadDim = 128;

// out [B, T, C] and lse [B, H, T] (fp32) from qkv [B, T, (H + 2 Hkv) hd], H query heads of
// hd = C / H columns, Hkv kv heads (dividing H). `k`: the kernels where tensor cores serve.
void flash_attention_forward(cudaStream_t s, void* out, float* lse, const void* qkv, int B, int T,
                             int C, int H, int Hkv, DType t, FlashKernels k);

// dqkv [B, T, (H + 2 Hkv) hd] overwritten; out and lse are forward's. row_dots: B * H * T floats
// of scratch (D = rowsum(dO * O)).
void flash_attention_backward(cudaStream_t s, void* dqkv, const void* dout, const void* qkv,
                              const void* out, const float* lse, int B, int T, int C, int H,
                              int Hkv, DType t, FlashKernels k, float* row_dots);

} // namespace shardlab::cuda
