// The GEMMs one training step of the model (GPT-2 or a Llama) runs, as shapes: every linear layer's
// forward product and its two backward products (the input gradient and the weight gradient), with
// how many times a step runs each. `shardlab calibrate` times exactly these (so its rate is the
// rate of this model's products, not of a square benchmark), and the time model (docs/TIME.md)
// divides their FLOPs by it. Attention's products run inside the attention kernels, not here.
#pragma once

#include "model/model_config.h"

#include <cstdint>
#include <string>
#include <vector>

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

// Forward, input-gradient and weight-gradient products of a block's linears (GPT-2: q/k/v,
// attention projection, MLP up and down; a Llama: fused q/k/v, o_proj, gate, up, down; per_step =
// layers) and of the head, tied or not (per_step 1),
// for `tokens` = micro-batch x sequence rows, in the order the step runs them within a block.
std::vector<GemmShape> model_gemm_shapes(const ModelConfig& c, std::int64_t tokens);

} // namespace shardlab
