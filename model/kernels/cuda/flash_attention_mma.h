// Flash attention on tensor cores with the softmax in registers: FlashAttention-2's real design,
// on PTX's mma.m16n8k16 (mma_m16n8k16.h), whose accumulator layout is specified. The default
// tensor-core path for bf16 and fp16 whose head dim is a multiple of 16 (flash_attention_path.h);
// the WMMA kernels (flash_attention_wmma.h) are the same scheme with S going through shared memory,
// kept selectable (SHARDLAB_CUDA_FLASH=wmma) so a GPU run can time one against the other.
//
// Same tiling as the WMMA kernels — tiles of kFlashMmaTile = 64 rows, 128 threads = 4 warps of 16
// rows (mma_wide: tiles of 128 rows a block, 32 a warp, of queries in the forward and dQ, of keys
// in dK/dV; the tiles they walk stay of 64), causal tiles skipped,
// lse kept per row, a deterministic two-kernel backward whose dK/dV blocks sum a kv head's group in
// order, grouped-query rows — but a warp's score tile never leaves its registers: S = Q K^T lands
// in eight 16 x 8 accumulators, a row's four lanes (same g) take its maximum and sum with two
// shuffles, P = e^(scale S - m) is rounded to 16 bits and becomes the A operand of O += P V where
// it stands (two accumulators are one A operand), and O is rescaled by e^(m_old - m_new) in
// registers. Backward likewise forms P and dS = P (dP - D) in registers, over 32 columns of the
// tile at a time (dK, dV or dQ for hd 128 take 64 registers each).
//
// What a tile costs in instructions beside its mma calls is what bounds these kernels (a tile's 64
// mma calls per warp against 32 scores per lane, and every instruction issued by the same warp
// schedulers), so as in FlashAttention-2: e^x is computed as 2^(x log2 e), the scale and log2 e
// folded into one fma before the SFU's ex2 (fast_exp2.h: 2 instructions where expf takes 11), m
// kept in log2 units (lse is stored natural). Everything else a tile could test is known when the
// kernel is compiled:
// - the head dim: the kernels compute at the width they are sized for (64 or 128); a smaller head
//   (a multiple of 16) has zeros in the tiles' other columns, whose products add nothing;
// - whether the tile is cut: only the tiles the causal diagonal or the sequence's end cross
//   evaluate the mask, in a copy of the code of their own (with_constant.h); the others, most of
//   them, run a copy without it. A cut tile is computed whole, as FlashAttention-2 does, the mask
//   setting the scores it hides to -inf: its blocks past the diagonal add exact zeros, where
//   choosing the blocks to compute cost more instructions than computing them. A warp none of
//   whose scores the mask keeps in a tile (or a backward pass over half of one) skips it;
// - a thread's share of a tile's copies (TileStream, flash_attention_common.h): the same column and
//   rows in every tile, with no division.
//
// The numbers are the WMMA kernels': P and dS rounded to the storage type before their products, l
// summed from the unrounded probabilities, products exact and accumulated in fp32 — so the same
// error bounds hold (tests/test_cuda_ops.cpp), though the bits differ (another order of the sums).
// Deterministic: each output element is one warp's fixed sequence of mma calls, no atomics.
//
// Operands come from the shared tiles by ldmatrix (an A operand, or two B operands, per
// instruction; V's transposed on the way). The tiles a block walks stream in by cp.async
// (cp_async.h) into two buffers: each tile, the block waits for its copies, meets at one barrier
// (it has landed for everyone, and everyone is done with the previous one) and starts the next
// tile's copies into the other buffer before computing — so the loads overlap the mma work.
// Shared memory per block (16-bit tiles, rows padded to 64 + 8 or 128 + 8 elements, which puts the
// 8 rows an ldmatrix phase reads 4 banks apart — no bank conflicts), for the kernels sized for
// hd <= 64 / <= 128: forward Q + two each of K, V 46,080 / 87,040 B; dK/dV K, V + two each of Q,
// dO, lse, D 56,320 / 105,472 B; dQ Q, dO + two each of K, V 55,296 / 104,448 B (mma_wide, its Q
// and dO, or K and V, tiles of 128 rows: forward 55,296 B, dQ 73,728 B, dK/dV 74,752 B). So a head
// of 80 to 112 takes hd 128's shared memory (and work): on an H100 a head of 80 runs 2 forward
// blocks a SM where it could run 3. A GPU that lets a block opt in to less than the backward's two
// stages (an sm_86/89's 99 KiB, for hd 80 to 128) runs it on one buffer, refilled after a second
// barrier a tile: the same bits.
// Included by .cu files only.
#pragma once

#include "core/dtype.h"
#include "model/kernels/cuda/flash_attention_path.h"

#include <cuda_runtime.h>

namespace shardlab::cuda {

constexpr int kFlashMmaTile = 64;

// As flash_attention_forward (flash_attention.h; grouped-query, Hkv kv heads dividing H), for t
// bf16 or f16 and hd = C / H a multiple of 16, at most kFlashMaxHeadDim. Each kernel runs in the
// form it is given (flash_attention_path.h), every form making the same mma calls on the same
// operands for every row, so giving the same bits:
// - regs: each warp holds the A operands of its rows that every tile of the walk uses (Q forward;
//   K and V, or Q and dO, backward) in registers instead of reading them from shared memory for
//   each tile;
// - wide: each warp owns two 16-row blocks (in the forward and dQ query tiles of 128 rows, key
//   tiles still of 64; in dK/dV key tiles of 128, query tiles of 64), and each operand of the
//   walked tiles it reads from shared memory feeds the mma calls of both: half those reads per
//   mma.
// Both at hd <= 64 only (mma_variants_fit; above it plain runs); timed against plain on a GPU.
void flash_attention_mma_forward(cudaStream_t s, void* out, float* lse, const void* qkv, int B,
                                 int T, int C, int H, int Hkv, DType t, MmaForm form);

// dQ, dK, dV into dqkv (overwritten) given forward's lse and D = rowsum(dO * O) [B, H, T]: the
// dK/dV kernel in form `kv`, then the dQ kernel in form `q`.
void flash_attention_mma_backward(cudaStream_t s, void* dqkv, const void* dout, const void* qkv,
                                  const float* lse, const float* row_dots, int B, int T, int C,
                                  int H, int Hkv, DType t, MmaForm kv, MmaForm q);

} // namespace shardlab::cuda
