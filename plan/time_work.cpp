// The work of one micro-batch, before any rate: the GEMMs' FLOPs (plan/gemm_shapes.h, the shapes
// calibrate timed), attention's own FLOPs (causal: the kernels skip the masked half), and the
// bytes the memory-bound kernels must move. docs/TIME.md section 5 derives each count from the
// kernels model/gpt2/gpt_model.cpp calls.
#include "core/error.h"
#include "plan/gemm_shapes.h"
#include "plan/time_model.h"

namespace shardlab {

namespace {
bool has_suffix(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
} // namespace

// Causal attention, per block: Q K^T and P V each 2 d FLOP per (query, visible key) pair,
// B T (T + 1) / 2 pairs: 2 B d T (T + 1) forward. Backward: dV, dP, dQ, dK (4 products);
// flash also recomputes S = Q K^T (5).
AttentionFlop attention_flop(double B, double T, double d, AttentionKind kind) {
    const double pair_flop = B * d * T * (T + 1);
    return {2 * pair_flop, (kind == AttentionKind::flash ? 5 : 4) * pair_flop};
}

// Memory-bound bytes (es = the activations' dtype size, N = B T tokens, d hidden), per block
// forward: LayerNorm 1 (x in, ln1 out) 2 N d es; the bias rows written before the qkv, proj and
// mlp.proj GEMMs and fused into fc's, (3d + d + 4d + d) N es = 9 N d es; residual + LayerNorm 2
// fused (x, atty in; res2, ln2 out) 4 N d es; GELU (fch in, fch_gelu out) 8 N d es; the last
// residual (out, res2 in; out out) 3 N d es: 26 N d es. Backward moves each twice (the saved
// input and the incoming gradient read, the outgoing gradient written, parameter gradients):
// 52 N d es. Head: LayerNorm f 2 N d es forward, 4 N d es backward; cross-entropy reads the
// logits twice (max, sum of exponentials) forward, 2 N Vp es, and reads them and writes their
// gradient backward, 2 N Vp es. Embeddings: the wte and wpe rows read and x written, 3 N d es;
// backward the same rows accumulated, 3 N d es.
StepWork micro_batch_work(const PlanModel& m, const PlanOptions& o) {
    if (m.arch() != Architecture::gpt2)
        throw UsageError("the time model has GPT-2's kernels only (docs/TIME.md section 5); give "
                         "a GPT-2 preset or fields, not a bare --params or a llama model");
    const ModelConfig c = m.config;
    const double B = o.micro_batch, T = o.seq ? o.seq : c.context, N = B * T, d = c.hidden,
                 Vp = c.padded_vocab();
    const double es = double(param_bytes_per_element(o.precision));
    StepWork w;
    w.layers = c.layers;
    for (const GemmShape& s : model_gemm_shapes(c, std::int64_t(N))) {
        const bool head = s.name.rfind("head.", 0) == 0, fwd = has_suffix(s.name, ".forward");
        WorkPart& part = head ? (fwd ? w.head_forward : w.head_backward)
                              : (fwd ? w.block_forward : w.block_backward);
        part.gemm_flop += s.flop(); // per block for the blocks' shapes (per_step = layers)
    }
    const AttentionFlop a = attention_flop(B, T, d, o.attention);
    w.block_forward.attention_flop = a.forward;
    w.block_backward.attention_flop = a.backward;
    w.block_forward.bytes = 26 * N * d * es;
    w.block_backward.bytes = 52 * N * d * es;
    w.head_forward.bytes = (2 * N * d + 2 * N * Vp) * es;
    w.head_backward.bytes = (4 * N * d + 2 * N * Vp) * es;
    w.embed_forward.bytes = w.embed_backward.bytes = 3 * N * d * es;
    for (int l = 0; l < c.layers; ++l) w.recomputed_blocks += o.checkpoint.checkpointed(l) ? 1 : 0;
    return w;
}

} // namespace shardlab
