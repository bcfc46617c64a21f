// TracedOps: the Ops of a backend, each call wrapped in a trace span on its stream (--trace). A
// decorator, so neither backend knows about tracing; the run uses it in place of backend.ops()
// only when a trace was asked for.
#pragma once

#include "core/tracer.h"
#include "model/ops.h"

namespace shardlab {

class TracedOps : public Ops {
  public:
    TracedOps(Ops& inner, Tracer& tracer) : in_(inner), t_(tracer) {}

    void gemm(Stream& s, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
              const Tensor& c, float alpha, float beta, const Tensor* bias = nullptr) override;
    void bias_grad(Stream& s, const Tensor& dbias, const Tensor& dout) override;
    void linear_gelu_forward(Stream& s, const Tensor& a, const Tensor& w, const Tensor& bias,
                             const Tensor& pre, const Tensor& out) override;
    void linear_param_grads(Stream& s, const Tensor& a, const Tensor& dout, const Tensor& dw,
                            const Tensor& dbias) override;
    void linear_gelu_backward(Stream& s, const Tensor& dout, const Tensor& w, const Tensor& pre,
                              const Tensor& din, const Tensor& dbias) override;
    void layernorm_forward(Stream& s, const Tensor& out, const Tensor& mean, const Tensor& rstd,
                           const Tensor& in, const Tensor& weight, const Tensor& bias) override;
    void residual_layernorm_forward(Stream& s, const Tensor& residual, const Tensor& x,
                                    const Tensor& out, const Tensor& mean, const Tensor& rstd,
                                    const Tensor& weight, const Tensor& bias) override;
    void layernorm_backward(Stream& s, const Tensor& din, const Tensor& dweight,
                            const Tensor& dbias, const Tensor& dout, const Tensor& in,
                            const Tensor& weight, const Tensor& mean, const Tensor& rstd) override;
    void attention_forward(Stream& s, const Tensor& out, const Tensor& att, const Tensor& qkv,
                           int heads) override;
    void attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout, const Tensor& qkv,
                            const Tensor& att, int heads) override;
    void flash_attention_forward(Stream& s, const Tensor& out, const Tensor& lse, const Tensor& qkv,
                                 int heads, int kv_heads) override;
    void flash_attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout,
                                  const Tensor& qkv, const Tensor& out, const Tensor& lse,
                                  int heads, int kv_heads) override;
    std::string flash_attention_kernels(DType t, int head_dim) const override {
        return in_.flash_attention_kernels(t, head_dim);
    }
    void gelu_forward(Stream& s, const Tensor& out, const Tensor& in) override;
    void gelu_backward(Stream& s, const Tensor& din, const Tensor& in, const Tensor& dout) override;
    void rmsnorm_forward(Stream& s, const Tensor& out, const Tensor& rstd, const Tensor& in,
                         const Tensor& weight, float eps) override;
    void rmsnorm_backward(Stream& s, const Tensor& din, const Tensor& dweight, const Tensor& dout,
                          const Tensor& in, const Tensor& weight, const Tensor& rstd) override;
    void rope_forward(Stream& s, const Tensor& x, int seq, int heads, int head_dim,
                      const Rope& rope) override;
    void rope_backward(Stream& s, const Tensor& dx, int seq, int heads, int head_dim,
                       const Rope& rope) override;
    void swiglu_forward(Stream& s, const Tensor& out, const Tensor& gate,
                        const Tensor& up) override;
    void swiglu_backward(Stream& s, const Tensor& dgate, const Tensor& dup, const Tensor& dout,
                         const Tensor& gate, const Tensor& up) override;
    void embedding_forward(Stream& s, const Tensor& out, const std::uint16_t* tokens,
                           const Tensor& wte, const Tensor& wpe) override;
    void embedding_backward(Stream& s, const Tensor& dwte, const Tensor& dwpe, const Tensor& dout,
                            const std::uint16_t* tokens) override;
    void cross_entropy(Stream& s, const Tensor& logits, int vocab, const std::uint16_t* targets,
                       float dlogits_scale, double* loss) override;
    void accumulate(Stream& s, const Tensor& dst, const Tensor& src) override;
    void convert(Stream& s, const Tensor& dst, const Tensor& src) override;
    void fill(Stream& s, const Tensor& dst, float value) override;
    void squared_norm(Stream& s, const std::vector<Tensor>& parts, float* out) override;
    void fixed_accumulate(Stream& s, const Tensor& acc, const Tensor& src, int exponent,
                          float* amax) override;
    void fixed_to_float(Stream& s, const Tensor& dst, const Tensor& acc, int exponent,
                        double divisor) override;
    void fixed_squares(Stream& s, const Tensor& src, int exponent, std::int64_t* out) override;
    void adamw(Stream& s, const std::vector<AdamWTensor>& tensors) override;

  private:
    Ops& in_;
    Tracer& t_;
};

} // namespace shardlab
