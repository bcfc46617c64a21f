// Causal multi-head self-attention on a fused qkv tensor [B, T, 3d] (q | k | v; head h is
// columns h*hd .. h*hd+hd of each). Forward writes out [B, T, d] and keeps the attention
// probabilities att [B, H, T, T] (zeros above the diagonal) for backward — the 5·a·s/h term of
// the activation model. Backward overwrites dqkv. tiles: the library of the tile products
// (tile_gemm.h; default OpenBLAS, the backend passes its own choice).
#pragma once

#include "model/kernels/cpu/numeric.h"
#include "model/kernels/cpu/tile_gemm.h"

namespace shardlab::cpu {

template <typename T>
void attention_forward(T* out, T* att, const T* qkv, int B, int T_, int C, int H,
                       const TileGemm& tiles = TileGemm());

template <typename T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, int B, int T_, int C,
                        int H, const TileGemm& tiles = TileGemm());

} // namespace shardlab::cpu
