// The CPU backend's Ops: each op becomes one task on the given stream that runs the templated
// kernel of model/kernels/cpu for the tensors' dtype (OpenMP threads inside the task). GEMMs go
// to oneDNN or OpenBLAS (cpu::CpuGemm; the attention kernels' tile products too, on the fp32
// library: cpu::TileGemm); their workspace (oneDNN's scratchpad, or the widened
// operands of a 16-bit OpenBLAS product) is allocated per call from the tracker (`workspace`) and
// released in stream order, so calls in flight never share it.
#pragma once

#include "core/memory_tracker.h"
#include "model/kernels/cpu/cpu_gemm.h"
#include "model/ops.h"

#include <memory>
#include <string>

namespace shardlab {

class CpuOps : public Ops {
  public:
    // gemm_request: "auto", "openblas" or "onednn" (see model/kernels/cpu/cpu_gemm.h).
    CpuOps(MemoryTracker& tracker, const std::string& gemm_request)
        : tracker_(tracker), gemm_(std::make_shared<cpu::CpuGemm>(gemm_request)) {}

    void gemm(Stream& s, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
              const Tensor& c, float alpha, float beta, const Tensor* bias) override;
    // The library each dtype's GEMMs run on: what tests check they are holding to the contract.
    const cpu::GemmPaths& gemm_paths() const { return gemm_->paths(); }
    void bias_grad(Stream& s, const Tensor& dbias, const Tensor& dout) override;
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
    std::string flash_attention_kernels(DType, int) const override { return "cpu"; }
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
    MemoryTracker& tracker_;
    // Shared with the queued GEMM tasks: a stream still draining when the backend is torn down
    // (after an error) keeps it alive.
    std::shared_ptr<cpu::CpuGemm> gemm_;
};

} // namespace shardlab
