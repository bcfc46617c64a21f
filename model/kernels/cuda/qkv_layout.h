// Where the heads sit in a fused qkv row of grouped-query attention, for the flash attention
// kernels (flash_attention.cu, flash_attention_wmma.cu): [q: H hd | k: Hkv hd | v: Hkv hd], Hkv
// dividing H, query head h reading kv head h / (H / Hkv) — consecutive query heads share one, as
// Hugging Face's repeat_kv. Hkv == H is multi-head attention's row [3C]: the same offsets as
// before grouping (k at C + h hd, v at 2C + h hd). Included by .cu files only.
#pragma once

#include <cstddef>

namespace shardlab::cuda {

struct QkvLayout {
    int hd, H, Hkv;
    __host__ __device__ std::size_t row() const { return std::size_t(H + 2 * Hkv) * hd; }
    __host__ __device__ int group() const { return H / Hkv; }          // query heads per kv head
    __host__ __device__ int kv_of(int h) const { return h / group(); } // query head h's kv head
    __host__ __device__ std::size_t q_col(int h) const { return std::size_t(h) * hd; }
    __host__ __device__ std::size_t k_col(int g) const { return std::size_t(H + g) * hd; }
    __host__ __device__ std::size_t v_col(int g) const { return std::size_t(H + Hkv + g) * hd; }
};

} // namespace shardlab::cuda
