// GPT-2's step, counted. GEMMs: a linear y = x W (W stored [in, out]) runs x @ W forward, dy @ W^T
// for the input gradient and x^T @ dy for the weight gradient; the head multiplies by wte^T (wte
// stored [Vp, d]), so its transposes are the other way round.
// Kernel bytes (docs/TIME.md section 5.1): es = the activations' dtype size, N = B T tokens, d
// hidden, Vp the padded vocabulary. Per block forward: LayerNorm 1 (x in, ln1 out) 2 N d es; the
// bias rows written before the qkv, proj and mlp.proj GEMMs and fused into fc's, (3d + d + 4d + d)
// N es = 9 N d es; residual + LayerNorm 2 fused (x, atty in; res2, ln2 out) 4 N d es; GELU (fch
// in, fch_gelu out) 8 N d es; the last residual (out, res2 in; out out) 3 N d es: 26 N d es.
// Backward moves each twice (the saved input and the incoming gradient read, the outgoing gradient
// written, parameter gradients): 52 N d es. Head: LayerNorm f 2 N d es forward, 4 N d es backward;
// cross-entropy reads the logits twice (max, sum of exponentials) forward, 2 N Vp es, and reads
// them and writes their gradient backward, 2 N Vp es. Embeddings: the wte and wpe rows read and x
// written, 3 N d es; backward the same rows accumulated, 3 N d es.
#include "model/gpt2/gpt_costs.h"

#include "model/activation_peak.h"

namespace shardlab {

// Named, not anonymous: families share unity batches, and a family copied to start another
// keeps these names (model/family_list.h).
namespace gpt2 {
void add_linear(std::vector<GemmShape>& out, const std::string& name, std::int64_t tokens,
                std::int64_t in, std::int64_t outf, int per_step) {
    out.push_back({name + ".forward", tokens, outf, in, false, false, per_step});
    out.push_back({name + ".input_grad", tokens, in, outf, false, true, per_step});
    out.push_back({name + ".weight_grad", in, outf, tokens, true, false, per_step});
}
} // namespace gpt2

std::vector<GemmShape> gpt2_gemm_shapes(const ModelConfig& c, std::int64_t tokens) {
    const std::int64_t d = c.hidden, vp = c.padded_vocab();
    std::vector<GemmShape> s;
    gpt2::add_linear(s, "attn.qkv", tokens, d, 3 * d, c.layers);
    gpt2::add_linear(s, "attn.proj", tokens, d, d, c.layers);
    gpt2::add_linear(s, "mlp.fc", tokens, d, 4 * d, c.layers);
    gpt2::add_linear(s, "mlp.proj", tokens, 4 * d, d, c.layers);
    // Head: logits = lnf @ wte^T; dlnf = dlogits @ wte; dwte = dlogits^T @ lnf.
    s.push_back({"head.forward", tokens, vp, d, false, true, 1});
    s.push_back({"head.input_grad", tokens, d, vp, false, false, 1});
    s.push_back({"head.weight_grad", vp, d, tokens, true, false, 1});
    return s;
}

KernelBytes gpt2_kernel_bytes(const ModelConfig& c, double N, double es) {
    const double d = c.hidden, Vp = c.padded_vocab();
    KernelBytes b;
    b.block_forward = 26 * N * d * es;
    b.block_backward = 52 * N * d * es;
    b.head_forward = (2 * N * d + 2 * N * Vp) * es;
    b.head_backward = (4 * N * d + 2 * N * Vp) * es;
    b.embed_forward = b.embed_backward = 3 * N * d * es;
    return b;
}

std::uint64_t gpt2_activation_bytes(const ModelConfig& c, int batch, int seq, std::uint64_t S,
                                    CheckpointPolicy ck, AttentionKind attention) {
    const std::uint64_t BT = std::uint64_t(batch) * seq, d = c.hidden,
                        BHT = std::uint64_t(batch) * c.heads * seq;
    const std::uint64_t att = attention == AttentionKind::flash ? 4 * BHT : S * BHT * seq;
    ActivationBytes b;
    b.layer = S * 15 * BT * d + att + 4 * BT * 4;
    b.inputs = (c.layers + 1) * BT * d * S;
    // ln_f's output and stats, and the logits: B*T x Vp, the padded vocabulary (GPTModel::forward).
    b.head = BT * d * S + 2 * BT * 4 + BT * std::uint64_t(c.padded_vocab()) * S;
    return activation_peak(b, c.layers, ck);
}

std::uint64_t gpt2_gradient_scratch_bytes(const ModelConfig& c, int batch, int seq,
                                          std::uint64_t S) {
    return 9 * std::uint64_t(batch) * std::uint64_t(seq) * std::uint64_t(c.hidden) * S;
}

} // namespace shardlab
