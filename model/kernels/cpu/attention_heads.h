// The per-(batch, head) data movement both CPU attention kernels share (attention.cpp, the
// materialising one, and flash_attention.cpp): one head's q, k and v out of the fused qkv rows
// [T, 3C] into dense T x hd buffers in the accumulation type, and its dq, dk, dv back into dqkv.
// QkvLayout places the heads of a grouped-query row (flash attention serves Hkv < H too), and
// softmax_scale the scores' scale.
#pragma once

#include "model/kernels/cpu/numeric.h"

#include <cmath>
#include <cstddef>

namespace shardlab::cpu {

// The scores' scale, 1/sqrt(hd) rounded to fp32 for every storage type, float64 included: forward
// and backward must take the same value, or the backward is the gradient of another function.
inline float softmax_scale(int hd) {
    return float(1 / std::sqrt(double(hd)));
}

// Copies one head's slice (columns col .. col+hd of each row) into dense T_ x hd rows.
template <typename T, typename A>
void load_head(const T* base, std::size_t row, int col, int T_, int hd, A* out) {
    for (int t = 0; t < T_; ++t)
        for (int e = 0; e < hd; ++e) out[std::size_t(t) * hd + e] = to_acc(base[t * row + col + e]);
}

// Writes dense T_ x hd rows `in` into one head's slice of rows (load_head's inverse), rounded.
template <typename T, typename A>
void store_head(T* base, std::size_t row, int col, int T_, int hd, const A* in) {
    for (int t = 0; t < T_; ++t)
        for (int e = 0; e < hd; ++e)
            base[t * row + col + e] = from_acc<T>(in[std::size_t(t) * hd + e]);
}

// Where heads sit in a fused qkv row of grouped-query attention: [q: H hd | k: Hkv hd | v: Hkv hd],
// Hkv dividing H, query head h reading kv head h / (H / Hkv) (consecutive query heads share one,
// as Hugging Face's repeat_kv). Hkv == H is multi-head attention's row [3C].
struct QkvLayout {
    int H, Hkv, hd;
    std::size_t row() const { return std::size_t(H + 2 * Hkv) * hd; }
    int group() const { return H / Hkv; }           // query heads per kv head
    int kv_of(int h) const { return h / group(); }  // the kv head query head h reads
    int q_col(int h) const { return h * hd; }       // query head h
    int k_col(int g) const { return (H + g) * hd; } // kv head g
    int v_col(int g) const { return (H + Hkv + g) * hd; }
};

// Head h of batch element b: q, k, v [T_, hd] from qkv [B, T_, 3C].
template <typename T, typename A>
void load_qkv_head(const T* qkv, int b, int h, int T_, int C, int hd, A* q, A* k, A* v) {
    const std::size_t row = std::size_t(3) * C;
    const T* base = qkv + std::size_t(b) * T_ * row;
    load_head(base, row, h * hd, T_, hd, q);
    load_head(base, row, C + h * hd, T_, hd, k);
    load_head(base, row, 2 * C + h * hd, T_, hd, v);
}

// dq, dk, dv [T_, hd] of head h of batch element b, rounded into dqkv [B, T_, 3C] (overwritten).
template <typename T, typename A>
void store_dqkv_head(T* dqkv, int b, int h, int T_, int C, int hd, const A* dq, const A* dk,
                     const A* dv) {
    const std::size_t row = std::size_t(3) * C;
    for (int t = 0; t < T_; ++t) {
        T* d = dqkv + (std::size_t(b) * T_ + t) * row + h * hd;
        for (int e = 0; e < hd; ++e) {
            d[e] = from_acc<T>(dq[std::size_t(t) * hd + e]);
            d[C + e] = from_acc<T>(dk[std::size_t(t) * hd + e]);
            d[2 * C + e] = from_acc<T>(dv[std::size_t(t) * hd + e]);
        }
    }
}

} // namespace shardlab::cpu
