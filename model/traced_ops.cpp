// Each op: a span named after it, with the shapes it works on, around the backend's own call.
#include "model/traced_ops.h"

namespace shardlab {

namespace {
std::string shape(const Tensor& t) {
    return t.shape_string() + " " + dtype_name(t.dtype);
}
} // namespace

void TracedOps::gemm(Stream& s, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                     const Tensor& c, float alpha, float beta, const Tensor* bias) {
    const TraceScope span(&t_, s, "gemm", "op",
                          {{"a", shape(a) + (trans_a ? " T" : "")},
                           {"b", shape(b) + (trans_b ? " T" : "")},
                           {"c", shape(c)}});
    in_.gemm(s, a, trans_a, b, trans_b, c, alpha, beta, bias);
}

void TracedOps::bias_grad(Stream& s, const Tensor& dbias, const Tensor& dout) {
    const TraceScope span(&t_, s, "bias_grad", "op", {{"dout", shape(dout)}});
    in_.bias_grad(s, dbias, dout);
}

// The fused linear steps carry their GEMM's shapes (a, b, c as gemm's span names them), so the
// roofline reads them as the GEMM they are.
void TracedOps::linear_gelu_forward(Stream& s, const Tensor& a, const Tensor& w, const Tensor& bias,
                                    const Tensor& pre, const Tensor& out) {
    const TraceScope span(&t_, s, "linear_gelu_forward", "op",
                          {{"a", shape(a)}, {"b", shape(w)}, {"c", shape(out)}});
    in_.linear_gelu_forward(s, a, w, bias, pre, out);
}

void TracedOps::linear_param_grads(Stream& s, const Tensor& a, const Tensor& dout, const Tensor& dw,
                                   const Tensor& dbias) {
    const TraceScope span(&t_, s, "linear_param_grads", "op",
                          {{"a", shape(a) + " T"}, {"b", shape(dout)}, {"c", shape(dw)}});
    in_.linear_param_grads(s, a, dout, dw, dbias);
}

void TracedOps::linear_gelu_backward(Stream& s, const Tensor& dout, const Tensor& w,
                                     const Tensor& pre, const Tensor& din, const Tensor& dbias) {
    const TraceScope span(&t_, s, "linear_gelu_backward", "op",
                          {{"a", shape(dout)}, {"b", shape(w) + " T"}, {"c", shape(din)}});
    in_.linear_gelu_backward(s, dout, w, pre, din, dbias);
}

void TracedOps::layernorm_forward(Stream& s, const Tensor& out, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& in, const Tensor& weight,
                                  const Tensor& bias) {
    const TraceScope span(&t_, s, "layernorm_forward", "op", {{"in", shape(in)}});
    in_.layernorm_forward(s, out, mean, rstd, in, weight, bias);
}

void TracedOps::residual_layernorm_forward(Stream& s, const Tensor& residual, const Tensor& x,
                                           const Tensor& out, const Tensor& mean,
                                           const Tensor& rstd, const Tensor& weight,
                                           const Tensor& bias) {
    const TraceScope span(&t_, s, "residual_layernorm_forward", "op", {{"x", shape(x)}});
    in_.residual_layernorm_forward(s, residual, x, out, mean, rstd, weight, bias);
}

void TracedOps::layernorm_backward(Stream& s, const Tensor& din, const Tensor& dweight,
                                   const Tensor& dbias, const Tensor& dout, const Tensor& in,
                                   const Tensor& weight, const Tensor& mean, const Tensor& rstd) {
    const TraceScope span(&t_, s, "layernorm_backward", "op", {{"dout", shape(dout)}});
    in_.layernorm_backward(s, din, dweight, dbias, dout, in, weight, mean, rstd);
}

void TracedOps::attention_forward(Stream& s, const Tensor& out, const Tensor& att,
                                  const Tensor& qkv, int heads) {
    const TraceScope span(&t_, s, "attention_forward", "op",
                          {{"qkv", shape(qkv)}, {"heads", heads}});
    in_.attention_forward(s, out, att, qkv, heads);
}

void TracedOps::attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout,
                                   const Tensor& qkv, const Tensor& att, int heads) {
    const TraceScope span(&t_, s, "attention_backward", "op",
                          {{"qkv", shape(qkv)}, {"heads", heads}});
    in_.attention_backward(s, dqkv, dout, qkv, att, heads);
}

void TracedOps::flash_attention_forward(Stream& s, const Tensor& out, const Tensor& lse,
                                        const Tensor& qkv, int heads, int kv_heads) {
    const TraceScope span(&t_, s, "flash_attention_forward", "op",
                          {{"qkv", shape(qkv)}, {"heads", heads}, {"kv_heads", kv_heads}});
    in_.flash_attention_forward(s, out, lse, qkv, heads, kv_heads);
}

void TracedOps::flash_attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout,
                                         const Tensor& qkv, const Tensor& out, const Tensor& lse,
                                         int heads, int kv_heads) {
    const TraceScope span(&t_, s, "flash_attention_backward", "op",
                          {{"qkv", shape(qkv)}, {"heads", heads}, {"kv_heads", kv_heads}});
    in_.flash_attention_backward(s, dqkv, dout, qkv, out, lse, heads, kv_heads);
}

void TracedOps::gelu_forward(Stream& s, const Tensor& out, const Tensor& in) {
    const TraceScope span(&t_, s, "gelu_forward", "op", {{"in", shape(in)}});
    in_.gelu_forward(s, out, in);
}

void TracedOps::gelu_backward(Stream& s, const Tensor& din, const Tensor& in, const Tensor& dout) {
    const TraceScope span(&t_, s, "gelu_backward", "op", {{"in", shape(in)}});
    in_.gelu_backward(s, din, in, dout);
}

void TracedOps::rmsnorm_forward(Stream& s, const Tensor& out, const Tensor& rstd, const Tensor& in,
                                const Tensor& weight, float eps) {
    const TraceScope span(&t_, s, "rmsnorm_forward", "op", {{"in", shape(in)}});
    in_.rmsnorm_forward(s, out, rstd, in, weight, eps);
}

void TracedOps::rmsnorm_backward(Stream& s, const Tensor& din, const Tensor& dweight,
                                 const Tensor& dout, const Tensor& in, const Tensor& weight,
                                 const Tensor& rstd) {
    const TraceScope span(&t_, s, "rmsnorm_backward", "op", {{"dout", shape(dout)}});
    in_.rmsnorm_backward(s, din, dweight, dout, in, weight, rstd);
}

void TracedOps::rope_forward(Stream& s, const Tensor& x, int seq, int heads, int head_dim,
                             const Rope& rope) {
    const TraceScope span(&t_, s, "rope_forward", "op", {{"x", shape(x)}});
    in_.rope_forward(s, x, seq, heads, head_dim, rope);
}

void TracedOps::rope_backward(Stream& s, const Tensor& dx, int seq, int heads, int head_dim,
                              const Rope& rope) {
    const TraceScope span(&t_, s, "rope_backward", "op", {{"dx", shape(dx)}});
    in_.rope_backward(s, dx, seq, heads, head_dim, rope);
}

void TracedOps::swiglu_forward(Stream& s, const Tensor& out, const Tensor& gate, const Tensor& up) {
    const TraceScope span(&t_, s, "swiglu_forward", "op", {{"gate", shape(gate)}});
    in_.swiglu_forward(s, out, gate, up);
}

void TracedOps::swiglu_backward(Stream& s, const Tensor& dgate, const Tensor& dup,
                                const Tensor& dout, const Tensor& gate, const Tensor& up) {
    const TraceScope span(&t_, s, "swiglu_backward", "op", {{"gate", shape(gate)}});
    in_.swiglu_backward(s, dgate, dup, dout, gate, up);
}

void TracedOps::embedding_forward(Stream& s, const Tensor& out, const std::uint16_t* tokens,
                                  const Tensor& wte, const Tensor& wpe) {
    const TraceScope span(&t_, s, "embedding_forward", "op", {{"out", shape(out)}});
    in_.embedding_forward(s, out, tokens, wte, wpe);
}

void TracedOps::embedding_backward(Stream& s, const Tensor& dwte, const Tensor& dwpe,
                                   const Tensor& dout, const std::uint16_t* tokens) {
    const TraceScope span(&t_, s, "embedding_backward", "op", {{"dout", shape(dout)}});
    in_.embedding_backward(s, dwte, dwpe, dout, tokens);
}

void TracedOps::cross_entropy(Stream& s, const Tensor& logits, int vocab,
                              const std::uint16_t* targets, float dlogits_scale, double* loss) {
    const TraceScope span(
        &t_, s, "cross_entropy", "op",
        {{"logits", shape(logits)}, {"vocab", vocab}, {"backward", dlogits_scale != 0}});
    in_.cross_entropy(s, logits, vocab, targets, dlogits_scale, loss);
}

void TracedOps::accumulate(Stream& s, const Tensor& dst, const Tensor& src) {
    const TraceScope span(&t_, s, "accumulate", "op", {{"dst", shape(dst)}});
    in_.accumulate(s, dst, src);
}

void TracedOps::convert(Stream& s, const Tensor& dst, const Tensor& src) {
    const TraceScope span(&t_, s, "convert", "op", {{"src", shape(src)}, {"dst", shape(dst)}});
    in_.convert(s, dst, src);
}

void TracedOps::fill(Stream& s, const Tensor& dst, float value) {
    const TraceScope span(&t_, s, "fill", "op", {{"dst", shape(dst)}});
    in_.fill(s, dst, value);
}

void TracedOps::fixed_accumulate(Stream& s, const Tensor& acc, const Tensor& src, int exponent,
                                 float* amax) {
    const TraceScope span(&t_, s, "fixed_accumulate", "op", {{"numel", src.numel()}});
    in_.fixed_accumulate(s, acc, src, exponent, amax);
}

void TracedOps::fixed_to_float(Stream& s, const Tensor& dst, const Tensor& acc, int exponent,
                               double divisor) {
    const TraceScope span(&t_, s, "fixed_to_float", "op", {{"numel", dst.numel()}});
    in_.fixed_to_float(s, dst, acc, exponent, divisor);
}

void TracedOps::fixed_squares(Stream& s, const Tensor& src, int exponent, std::int64_t* out) {
    const TraceScope span(&t_, s, "fixed_squares", "op", {{"numel", src.numel()}});
    in_.fixed_squares(s, src, exponent, out);
}

void TracedOps::squared_norm(Stream& s, const std::vector<Tensor>& parts, float* out) {
    const TraceScope span(&t_, s, "squared_norm", "op", {{"parts", parts.size()}});
    in_.squared_norm(s, parts, out);
}

void TracedOps::adamw(Stream& s, const std::vector<AdamWTensor>& tensors) {
    std::size_t n = 0; // the tensors' elements together, as one fp32 master
    for (const AdamWTensor& x : tensors) n += x.master.numel();
    const Tensor master{nullptr, DType::f32, Shape{std::int64_t(n)}};
    const TraceScope span(&t_, s, "adamw", "op",
                          {{"tensors", tensors.size()}, {"master", shape(master)}});
    in_.adamw(s, tensors);
}

} // namespace shardlab
