// RoPE's frequencies, shared by the CPU and CUDA kernels (host and device): pair j of a head of D
// dimensions turns by p * f_j at position p, f_j = theta^(-2j/D) — scaled, for Llama 3.1 / 3.2, by
// rope_scaling's "llama3" rule (transformers' _compute_llama3_parameters): with wavelength
// w = 2 pi / f, context C = original_max_position_embeddings, the high frequencies (w < C / high)
// stay, the low ones (w > C / low) are divided by `factor`, and between them
//   s = (C / w - low) / (high - low),   f' = (1 - s) f / factor + s f.
// Computed in double; the kernels round cos and sin once.
#pragma once

#include "model/kernels/fixed_point.h" // SHARDLAB_HD

#include <cmath>

namespace shardlab {

struct Rope {
    float theta = 10000.0f;
    // Llama 3's rope_scaling; factor 0: none.
    float factor = 0.0f, low_freq_factor = 1.0f, high_freq_factor = 4.0f;
    int original_context = 8192;
};

SHARDLAB_HD inline double rope_frequency(const Rope& r, int j, int D) {
    const double f = pow(double(r.theta), -2.0 * j / D);
    if (r.factor == 0.0f) return f;
    const double pi = 3.14159265358979323846;
    const double w = 2 * pi / f, C = r.original_context;
    if (w < C / r.high_freq_factor) return f;
    if (w > C / r.low_freq_factor) return f / r.factor;
    const double s = (C / w - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
    return (1 - s) * f / r.factor + s * f;
}

} // namespace shardlab
