// Flash attention on the CPU (FlashAttention-2's scheme): the same causal multi-head attention as
// attention.h, computed in query tiles x key tiles with an online softmax, so the B*H*T*T
// probabilities are never stored. Grouped-query too: qkv [B, T, (H + 2 Hkv) hd] holds H query heads
// and Hkv kv heads (Hkv divides H; query head h reads kv head h / (H / Hkv): attention_heads.h's
// QkvLayout); Hkv == H is multi-head attention's [B, T, 3d]. C = H hd is the output's width.
// Forward writes out [B, T, C] and lse [B, H, T] (fp32, natural log of each query row's sum of
// exp(scaled scores)); backward recomputes the probabilities tile by tile from lse and overwrites
// dqkv. lse is acc_t<T>: fp32 for the stored dtypes (the Ops contract), double for the float64
// finite-difference checks. tiles: the library of the tile products (tile_gemm.h; default
// OpenBLAS, the backend passes its own choice).
#pragma once

#include "model/kernels/cpu/numeric.h"
#include "model/kernels/cpu/tile_gemm.h"

namespace shardlab::cpu {

template <typename T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* qkv, int B, int T_, int C, int H,
                             int Hkv, const TileGemm& tiles = TileGemm());

// out is forward's stored (rounded) output: backward's D_i = rowsum(dO_i * O_i) reads it. dqkv is
// overwritten; a kv head's dk, dv are the sums over its group's query heads, in head order.
template <typename T>
void flash_attention_backward(T* dqkv, const T* dout, const T* qkv, const T* out,
                              const acc_t<T>* lse, int B, int T_, int C, int H, int Hkv,
                              const TileGemm& tiles = TileGemm());

// Multi-head attention (Hkv = H), for callers that know no grouping.
template <typename T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* qkv, int B, int T_, int C, int H,
                             const TileGemm& tiles = TileGemm()) {
    flash_attention_forward(out, lse, qkv, B, T_, C, H, H, tiles);
}
template <typename T>
void flash_attention_backward(T* dqkv, const T* dout, const T* qkv, const T* out,
                              const acc_t<T>* lse, int B, int T_, int C, int H,
                              const TileGemm& tiles = TileGemm()) {
    flash_attention_backward(dqkv, dout, qkv, out, lse, B, T_, C, H, H, tiles);
}

} // namespace shardlab::cpu
