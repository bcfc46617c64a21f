// A Llama's memory-bound bytes, from the kernels model/llama/llama_model.cpp calls (docs/TIME.md
// section 5.2). Each kernel is charged every tensor it reads or writes once (what one fused pass
// moves; the per-row fp32 1/rms, the norm weights [d] and the rotary angles are left out: < 1%).
// es = the activations' dtype size, N = B T tokens, d hidden (= H Dh, the query width), k = Hkv Dh
// the key (and value) width, f the MLP's width, Vp the padded vocabulary. No linear has a bias, so
// no bias rows are written before the GEMMs (GPT-2's 9 N d es).
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
#include "plan/kernel_bytes.h"

namespace shardlab {

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

} // namespace shardlab
