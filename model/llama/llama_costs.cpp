// A Llama's step, counted. Kernel bytes: the memory-bound kernels llama_model.cpp calls
// (docs/TIME.md section 5.2). Each kernel is charged every tensor it reads or writes once (what one
// fused pass moves; the per-row fp32 1/rms, the norm weights [d] and the rotary angles are left
// out: < 1%). es = the activations' dtype size, N = B T tokens, d hidden (= H Dh, the query width),
// k = Hkv Dh the key (and value) width, f the MLP's width, Vp the padded vocabulary. No linear has
// a bias, so no bias rows are written before the GEMMs (GPT-2's 9 N d es).
//   Layer forward: RMSNorm (x in, n1 out) 2 N d; RoPE in place over q and k (read, write)
//   2 N (d + k); residual h += x (h, x in; h out) 3 N d; RMSNorm (h in, n2 out) 2 N d; SwiGLU
//   (gate, up in; act out) 3 N f; residual out += h 3 N d: (12 d + 2 k + 3 f) N es.
//   Layer backward: SwiGLU (dact, gate, up in; dgate, dup out) 5 N f; the post-attention RMSNorm
//   (dy, h in; dx read and written: its input gradient accumulates onto the residual's) 4 N d;
//   RoPE's inverse rotation in place over dq, dk 2 N (d + k); the input RMSNorm 4 N d. The
//   residual adds have no backward kernel (the norms accumulate into dx): (10 d + 2 k + 5 f) N es.
//   Head: the final RMSNorm 2 N d forward, 4 N d backward; dx zeroed before it, N d; the
//   cross-entropy (GPT-2's kernel, counted as there) 2 N Vp each way.
//   Embeddings: embed_tokens rows read and x written, 2 N d (no position table: RoPE carries
//   positions); backward dx read, the rows accumulated (read, written), 3 N d.
#include "model/llama/llama_costs.h"

#include "model/activation_peak.h"

namespace shardlab {

// Named, not anonymous: families share unity batches, and a family copied to start another
// keeps these names (model/family_list.h).
namespace llama {
std::uint64_t qkv_width(const ModelConfig& c) {
    return std::uint64_t(c.heads + 2 * c.kv_heads) * std::uint64_t(c.head_dim());
}
// A Llama's linears are nn.Linear's y = x W^T (W stored [out, in], model/llama/llama_model.cpp):
// x @ W^T forward, dy @ W for the input gradient, dy^T @ x for the weight gradient.
void add_linear_t(std::vector<GemmShape>& out, const std::string& name, std::int64_t tokens,
                  std::int64_t in, std::int64_t outf, int per_step) {
    out.push_back({name + ".forward", tokens, outf, in, false, true, per_step});
    out.push_back({name + ".input_grad", tokens, in, outf, false, false, per_step});
    out.push_back({name + ".weight_grad", outf, in, tokens, true, false, per_step});
}
} // namespace llama

std::vector<GemmShape> llama_gemm_shapes(const ModelConfig& c, std::int64_t tokens) {
    const std::int64_t d = c.hidden, f = c.ffn(),
                       q = std::int64_t(c.heads + 2 * c.kv_heads) * c.head_dim();
    std::vector<GemmShape> s;
    llama::add_linear_t(s, "attn.qkv", tokens, d, q, c.layers);
    llama::add_linear_t(s, "attn.o", tokens, d, d, c.layers);
    llama::add_linear_t(s, "mlp.gate", tokens, d, f, c.layers);
    llama::add_linear_t(s, "mlp.up", tokens, d, f, c.layers);
    llama::add_linear_t(s, "mlp.down", tokens, f, d, c.layers);
    llama::add_linear_t(s, "head", tokens, d, c.padded_vocab(), 1);
    return s;
}

KernelBytes llama_kernel_bytes(const ModelConfig& c, double N, double es) {
    const double d = c.hidden, k = double(c.kv_heads) * c.head_dim(), f = c.ffn(),
                 Vp = c.padded_vocab();
    KernelBytes b;
    b.block_forward = (12 * d + 2 * k + 3 * f) * N * es;
    b.block_backward = (10 * d + 2 * k + 5 * f) * N * es;
    b.head_forward = (2 * N * d + 2 * N * Vp) * es;
    b.head_backward = (5 * N * d + 2 * N * Vp) * es;
    b.embed_forward = 2 * N * d * es;
    b.embed_backward = 3 * N * d * es;
    return b;
}

std::uint64_t llama_activation_bytes(const ModelConfig& c, int batch, int seq, std::uint64_t S,
                                     CheckpointPolicy checkpoint, AttentionKind) {
    const std::uint64_t BT = std::uint64_t(batch) * std::uint64_t(seq), d = std::uint64_t(c.hidden),
                        f = std::uint64_t(c.ffn());
    const std::uint64_t BHT = std::uint64_t(batch) * std::uint64_t(c.heads) * std::uint64_t(seq);
    ActivationBytes b;
    b.layer = S * BT * (4 * d + llama::qkv_width(c) + 3 * f) + 2 * BT * 4 + BHT * 4;
    b.inputs = std::uint64_t(c.layers + 1) * BT * d * S;
    b.head = BT * d * S + BT * 4 + BT * std::uint64_t(c.padded_vocab()) * S;
    return activation_peak(b, c.layers, checkpoint);
}

std::uint64_t llama_gradient_scratch_bytes(const ModelConfig& c, int batch, int seq,
                                           std::uint64_t S) {
    const std::uint64_t BT = std::uint64_t(batch) * std::uint64_t(seq);
    return S * BT *
           (2 * std::uint64_t(c.hidden) + llama::qkv_width(c) + 3 * std::uint64_t(c.ffn()));
}

} // namespace shardlab
