// Precision modes and the dispatch from a run-time mode to the kernels' storage type.
#pragma once

#include "core/dtype.h"
#include "core/error.h"
#include "model/kernels/cpu/numeric.h"

#include <string>

namespace shardlab {

enum class Precision { fp32, bf16, fp16 };

inline Precision parse_precision(const std::string& s) {
    if (s == "fp32") return Precision::fp32;
    if (s == "bf16") return Precision::bf16;
    if (s == "fp16") return Precision::fp16;
    throw UsageError("unknown precision '" + s + "'; use fp32, bf16 or fp16");
}

inline DType param_dtype(Precision p) {
    return p == Precision::fp32 ? DType::f32 : p == Precision::bf16 ? DType::bf16 : DType::f16;
}

// Calls fn.template operator()<T>() with T = float, bf16_t or f16_t.
template <typename Fn>
decltype(auto) with_storage_type(Precision p, Fn&& fn) {
    switch (p) {
    case Precision::bf16:
        return fn.template operator()<bf16_t>();
    case Precision::fp16:
        return fn.template operator()<f16_t>();
    case Precision::fp32:
        break;
    }
    return fn.template operator()<float>();
}

} // namespace shardlab
