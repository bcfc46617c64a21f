// The query width C = H D of a grouped-query attention's fused qkv [B, T, (H + 2 Hkv) D] (the
// layout of Ops::flash_attention_forward), checked: Hkv dividing H, the row a whole number of
// heads. Hkv == H gives multi-head attention's C = row / 3.
#pragma once

#include "core/error.h"
#include "core/tensor.h"

#include <cstdint>
#include <string>

namespace shardlab {

inline int grouped_qkv_width(const Tensor& qkv, int heads, int kv_heads) {
    check(heads > 0 && kv_heads > 0 && heads % kv_heads == 0,
          "attention: kv_heads = " + std::to_string(kv_heads) +
              " does not divide heads = " + std::to_string(heads));
    const std::int64_t row = qkv.dim(2), parts = std::int64_t(heads) + 2 * kv_heads;
    check(row % parts == 0, "attention: a qkv row of " + std::to_string(row) +
                                " is not (heads + 2 kv_heads) = " + std::to_string(parts) +
                                " whole heads");
    return int(row / parts * heads);
}

} // namespace shardlab
