// Precision modes: the dtype parameters, gradients and activations are stored in (fp32
// arithmetic inside every op either way).
#pragma once

#include "core/dtype.h"
#include "core/error.h"

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

} // namespace shardlab
