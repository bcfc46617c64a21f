// GPT-2's memory-bound bytes, from the kernels model/gpt2/gpt_model.cpp calls (docs/TIME.md
// section 5.1). es = the activations' dtype size, N = B T tokens, d hidden, Vp the padded
// vocabulary. Per block forward: LayerNorm 1 (x in, ln1 out) 2 N d es; the bias rows written
// before the qkv, proj and mlp.proj GEMMs and fused into fc's, (3d + d + 4d + d) N es = 9 N d es;
// residual + LayerNorm 2 fused (x, atty in; res2, ln2 out) 4 N d es; GELU (fch in, fch_gelu out)
// 8 N d es; the last residual (out, res2 in; out out) 3 N d es: 26 N d es. Backward moves each
// twice (the saved input and the incoming gradient read, the outgoing gradient written, parameter
// gradients): 52 N d es. Head: LayerNorm f 2 N d es forward, 4 N d es backward; cross-entropy
// reads the logits twice (max, sum of exponentials) forward, 2 N Vp es, and reads them and writes
// their gradient backward, 2 N Vp es. Embeddings: the wte and wpe rows read and x written,
// 3 N d es; backward the same rows accumulated, 3 N d es.
#include "plan/kernel_bytes.h"

namespace shardlab {

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

} // namespace shardlab
