// One GEMM of a training step, as a shape: what each family lists (Family::gemm_shapes) so that
// `shardlab calibrate` times exactly these products and the time model divides their FLOPs by the
// rate it measured (docs/TIME.md).
#pragma once

#include <cstdint>
#include <string>

namespace shardlab {

// C [m, n] = op(A) [m, k] @ op(B) [k, n], as Ops::gemm takes it: A is stored [k, m] when
// trans_a, B is stored [n, k] when trans_b.
struct GemmShape {
    std::string name; // "mlp.fc.forward", "head.weight_grad", ...
    std::int64_t m = 0, n = 0, k = 0;
    bool trans_a = false, trans_b = false;
    int per_step = 1; // calls per micro-batch (the blocks' linears: once per layer)
    double flop() const { return 2.0 * double(m) * double(n) * double(k); }
};

} // namespace shardlab
