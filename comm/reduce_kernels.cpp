// Tight loops the compiler vectorizes: widen to fp32, add, (divide), round back.
#include "comm/reduce_kernels.h"

#include "core/error.h"

#include <cstdint>

namespace shardlab {

namespace {
template <float (*load)(std::uint16_t), std::uint16_t (*store)(float)>
void add_16(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b, std::size_t n,
            float divisor) {
    if (divisor == 1.0f) {
        for (std::size_t i = 0; i < n; ++i) out[i] = store(load(a[i]) + load(b[i]));
    } else {
        for (std::size_t i = 0; i < n; ++i) out[i] = store((load(a[i]) + load(b[i])) / divisor);
    }
}
} // namespace

void reduce_add(void* out, const void* a, const void* b, std::size_t n, DType t, float divisor) {
    switch (t) {
    case DType::f32: {
        auto* o = static_cast<float*>(out);
        auto* x = static_cast<const float*>(a);
        auto* y = static_cast<const float*>(b);
        if (divisor == 1.0f) {
            for (std::size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
        } else {
            for (std::size_t i = 0; i < n; ++i) o[i] = (x[i] + y[i]) / divisor;
        }
        return;
    }
    case DType::bf16:
        return add_16<bf16_to_f32, f32_to_bf16>(static_cast<std::uint16_t*>(out),
                                                static_cast<const std::uint16_t*>(a),
                                                static_cast<const std::uint16_t*>(b), n, divisor);
    case DType::f16:
        return add_16<f16_to_f32, f32_to_f16>(static_cast<std::uint16_t*>(out),
                                              static_cast<const std::uint16_t*>(a),
                                              static_cast<const std::uint16_t*>(b), n, divisor);
    case DType::i64: { // exact: --reproducible's fixed-point sums; an average is not an integer
        check(divisor == 1.0f, "internal: int64 is summed, never averaged");
        auto* o = static_cast<std::int64_t*>(out);
        auto* x = static_cast<const std::int64_t*>(a);
        auto* y = static_cast<const std::int64_t*>(b);
        for (std::size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
        return;
    }
    }
}

void scale_down(void* out, const void* in, std::size_t n, DType t, float divisor) {
    for (std::size_t i = 0; i < n; ++i) store_from_f32(out, t, i, load_as_f32(in, t, i) / divisor);
}

} // namespace shardlab
