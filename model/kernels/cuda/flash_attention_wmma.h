// Flash attention with its tile products on tensor cores: the WMMA API (nvcuda::wmma, m16n16k16,
// bf16/fp16 inputs, fp32 accumulators, sm_80+), for bf16 and fp16 storage whose head dim hd is a
// multiple of 16 (flash_attention_path.h; the rest takes the fp32 CUDA-core kernels of
// flash_attention.h, whose launchers call these) when SHARDLAB_CUDA_FLASH=wmma; by default the
// same scheme runs on PTX mma.sync with the softmax in registers (flash_attention_mma.h). Same
// scheme as the CUDA-core kernels — FlashAttention-2's tiling, causal tiles skipped, lse kept per
// row, a deterministic two-kernel backward (its dK/dV blocks per kv head, summing the group's
// query heads in order), grouped-query rows — with
// tiles of kFlashWmmaTile = 64 rows and 128 threads: 4 warps, each owning 16 rows of the block's
// tile (query rows forward and for dQ, key rows for dK/dV), as FA2 splits a tile among warps.
//
// Why S goes through shared memory: the online softmax works on rows (a row's maximum and sum, the
// O row rescaled by e^(m_old - m_new)), but WMMA leaves which lane holds which accumulator element
// unspecified. So each warp stores its 16 x 64 score tile S = Q K^T (store_matrix_sync, fp32) to
// its own shared scratch, two lanes per row read it back there (the row reductions are one
// shuffle), and write P = e^(scale S - m), rounded to the storage dtype, into a 16 x 64 shared
// tile that is loaded as a matrix_a fragment for O += P V. O itself must be rescaled by row, so it
// lives in registers with the same two-lanes-per-row ownership: each tile's P V goes into a fresh
// accumulator, through the scratch, and is added to the O row as O e^(m_old - m_new) + (P V). The
// standard WMMA flash attention design; it costs a store and a read of 16 x hd floats per warp and
// tile, about as much shared-memory traffic as the V tile's fragment loads (docs/GPU.md).
// Backward needs no rescaling: dK, dV (per key tile) and dQ (per query tile) stay in accumulator
// fragments for the whole walk and are stored once; only S and dP = dO V^T go through the scratch
// to form P = e^(scale S - lse) and dS = P (dP - D) elementwise, rounded to 16 bits for the
// dV += P^T dO, dK += dS^T Q, dQ += dS K products.
//
// What rounding P (and dS) to 16 bits costs: WMMA multiplies 16-bit inputs only, so each
// probability carries a relative error of up to the storage type's unit roundoff u16 (2^-8 bf16,
// 2^-11 fp16; in fp16 also an absolute 2^-25 where P drops below the normal range) — the same
// rounding the materialising path's GEMMs apply to P. The row sum l is taken from the unrounded
// fp32 probabilities, so out = sum_j round(P_ij) v_j / l is off by at most u16 sum_j P_ij |v_j|
// (plus fp32 roundoff), a relative u16 of the output's magnitude: below the one rounding of the
// output to that same 16-bit type (an ulp is 2 u16), which the fp32 kernels already incur; dV, dK
// and dQ likewise get u16 sum |P dO|, u16 sum |dS q|, u16 sum |dS k|. The products themselves are
// exact in fp32 and accumulated in fp32. tests/test_cuda_ops.cpp adds exactly these terms to the
// float64 comparison's bounds for this path. lse and the output's normalisation are unaffected.
//
// Shared memory per block (16-bit tiles, rows padded to hd + 8 elements: 16-byte multiples as
// WMMA's ldm needs, shifting each row 4 banks; per-warp fp32 scratch 16 x (max(64, hd) + 4); per-
// warp 16-bit P / dS tiles 16 x 72; 128 bytes to align the base for WMMA's 32-byte rule):
//   forward Q, K, V + scratch + P: 54,400 B at hd 64, 95,360 B at hd 128;
//   dK/dV   K, V, Q, dO + scratch + P, dS + lse, D: 73,344 B at hd 64, 122,496 B at hd 128;
//   dQ      Q, dO, K, V + scratch + dS (its lse and D in registers): 63,616 B and 112,768 B.
// All above 48 KiB: the launchers opt in (cudaFuncSetAttribute), as the fp32 kernels do at hd 128.
// Deterministic as the fp32 kernels: each output element is one warp's fixed sequence of mma_sync
// calls, no atomics, so the same inputs give the same bits (on one GPU model: the tensor cores'
// internal addition order is the hardware's, fixed for a given chip).
// Included by .cu files only.
#pragma once

#include "core/dtype.h"

#include <cuda_runtime.h>

namespace shardlab::cuda {

constexpr int kFlashWmmaTile = 64;

// As flash_attention_forward (flash_attention.h; grouped-query, Hkv kv heads dividing H), for t
// bf16 or f16 and hd = C / H a multiple of 16, at most kFlashMaxHeadDim.
void flash_attention_wmma_forward(cudaStream_t s, void* out, float* lse, const void* qkv, int B,
                                  int T, int C, int H, int Hkv, DType t);

// dQ, dK, dV into dqkv (overwritten) given forward's lse and D = rowsum(dO * O) [B, H, T].
void flash_attention_wmma_backward(cudaStream_t s, void* dqkv, const void* dout, const void* qkv,
                                   const float* lse, const float* row_dots, int B, int T, int C,
                                   int H, int Hkv, DType t);

} // namespace shardlab::cuda
