// The work of one micro-batch, before any rate: the GEMMs' FLOPs (Family::gemm_shapes, the shapes
// calibrate timed, each family's own), attention's own FLOPs (causal: the kernels skip the masked
// half), and the bytes the memory-bound kernels must move (Family::kernel_bytes). docs/TIME.md
// section 5 derives each count from the kernels the family's model calls.
#include "core/error.h"
#include "model/family.h"
#include "plan/time_model.h"

#include <fmt/format.h>

namespace shardlab {

namespace {
bool has_suffix(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A bare --params count's config has arch params_only and no shape (plan/plan_model.h).
KernelBytes family_kernel_bytes(const ModelConfig& c, const PlanOptions& o, double N, double es) {
    if (c.arch == Architecture::params_only)
        throw UsageError("the time model needs the model's shape (docs/TIME.md section 5): give a "
                         "preset or the model's fields (--arch, --layers, --hidden, ...), not a "
                         "bare --params count");
    const Family& f = family(c.arch);
    require_attention(f, o.attention);
    return f.kernel_bytes(c, N, es);
}
} // namespace

// Causal attention, per block: Q K^T and P V each 2 d FLOP per (query, visible key) pair,
// B T (T + 1) / 2 pairs: 2 B d T (T + 1) forward. Backward: dV, dP, dQ, dK (4 products);
// flash also recomputes S = Q K^T (5). Grouped-query attention counts the same: every query head
// still meets every visible key of its (shared) key head, and the H query heads span d.
AttentionFlop attention_flop(double B, double T, double d, AttentionKind kind) {
    const double pair_flop = B * d * T * (T + 1);
    return {2 * pair_flop, (kind == AttentionKind::flash ? 5 : 4) * pair_flop};
}

StepWork micro_batch_work(const PlanModel& m, const PlanOptions& o) {
    const ModelConfig c = m.config;
    const double B = o.micro_batch, T = o.seq ? o.seq : m.config.context, N = B * T;
    const KernelBytes bytes =
        family_kernel_bytes(c, o, N, double(param_bytes_per_element(o.precision)));
    StepWork w;
    w.layers = c.layers;
    for (const GemmShape& s : family(c.arch).gemm_shapes(c, std::int64_t(N))) {
        const bool head = s.name.rfind("head.", 0) == 0, fwd = has_suffix(s.name, ".forward");
        WorkPart& part = head ? (fwd ? w.head_forward : w.head_backward)
                              : (fwd ? w.block_forward : w.block_backward);
        part.gemm_flop += s.flop(); // per block for the blocks' shapes (per_step = layers)
    }
    const AttentionFlop a = attention_flop(B, T, c.hidden, o.attention);
    w.block_forward.attention_flop = a.forward;
    w.block_backward.attention_flop = a.backward;
    w.block_forward.bytes = bytes.block_forward;
    w.block_backward.bytes = bytes.block_backward;
    w.head_forward.bytes = bytes.head_forward;
    w.head_backward.bytes = bytes.head_backward;
    w.embed_forward.bytes = bytes.embed_forward;
    w.embed_backward.bytes = bytes.embed_backward;
    for (int l = 0; l < c.layers; ++l) w.recomputed_blocks += o.checkpoint.checkpointed(l) ? 1 : 0;
    return w;
}

} // namespace shardlab
