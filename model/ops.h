// Ops: every computation the model and the optimizer make, as one interface with run-time dtypes
// (fp32, bf16 or fp16 storage; fp32 arithmetic inside, rounded once on store). Each op runs in the
// order of the stream it is given and returns at once: it never synchronises. The CPU backend
// implements it with the kernels of model/kernels/cpu (model/ops_cpu.h); the CUDA backend with
// cuBLAS and CUDA kernels. Tensors are dense and row-major; "+=" marks an op that accumulates into
// its output instead of overwriting it (so gradients add up over micro-batches).
#pragma once

#include "core/error.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "model/kernels/adamw_step.h"
#include "model/kernels/rope_frequency.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

// One tensor of an AdamW update (Ops::adamw): its fp32 master weights and moments, its gradient,
// the parameters in their training dtype to refresh (none when params.data is null: fp32 without a
// master copy), and its step's coefficients (its weight decay).
struct AdamWTensor {
    Tensor master, m, v, grad, params;
    AdamWStep k;
};

class Ops {
  public:
    virtual ~Ops() = default;

    // c = alpha * op(a) @ op(b) + beta * c, op = transpose when asked; with a bias, c =
    // alpha * op(a) @ op(b) + bias (bias [n] added to every row; beta must be 0). 2-D tensors, or
    // 3-D ones batched over the first dimension (strided-batched GEMM). fp32 accumulation.
    virtual void gemm(Stream& s, const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                      const Tensor& c, float alpha, float beta, const Tensor* bias = nullptr) = 0;
    // dbias [n] += the column sums of dout [rows, n].
    virtual void bias_grad(Stream& s, const Tensor& dbias, const Tensor& dout) = 0;

    // Fusable linear-layer steps. Each default is the ops it names, in order (the CPU's path, and
    // the CUDA backend's when cuBLASLt is off or cannot run the shape). The CUDA backend runs the
    // GELU forward and the parameter gradients as one cuBLASLt GEMM with an epilogue
    // (model/kernels/cuda/gemm_epilogue.h): GELU of the unrounded pre-activation, and in 16-bit a
    // bias gradient rounded once more before its add. Its GELU backward takes no epilogue (the
    // separate kernels were faster on an H200: docs/BENCHMARKS.md): after the GEMM, one kernel
    // computes it and fc's bias gradient, with the bits of this default's last two calls.
    // pre = a @ w + bias, out = gelu(pre): the MLP's first linear and its activation, both kept
    // for backward.
    virtual void linear_gelu_forward(Stream& s, const Tensor& a, const Tensor& w,
                                     const Tensor& bias, const Tensor& pre, const Tensor& out) {
        gemm(s, a, false, w, false, pre, 1.0f, 0.0f, &bias);
        gelu_forward(s, out, pre);
    }
    // A linear's parameter gradients: dw += a^T @ dout, dbias += the column sums of dout.
    virtual void linear_param_grads(Stream& s, const Tensor& a, const Tensor& dout,
                                    const Tensor& dw, const Tensor& dbias) {
        gemm(s, a, true, dout, false, dw, 1.0f, 1.0f);
        bias_grad(s, dbias, dout);
    }
    // Back through a linear (weight w) to the GELU before it: din = gelu'(pre) * (dout @ w^T),
    // overwritten; and dbias += the column sums of din — the bias gradient of the linear that
    // made pre.
    virtual void linear_gelu_backward(Stream& s, const Tensor& dout, const Tensor& w,
                                      const Tensor& pre, const Tensor& din, const Tensor& dbias) {
        gemm(s, dout, false, w, true, din, 1.0f, 0.0f);
        gelu_backward(s, din, pre, din);
        bias_grad(s, dbias, din);
    }

    // LayerNorm over the last dimension of in [N, C] (eps 1e-5); mean and rstd [N] are fp32.
    virtual void layernorm_forward(Stream& s, const Tensor& out, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& in, const Tensor& weight,
                                   const Tensor& bias) = 0;
    // residual += x, then out = layernorm(residual): the residual connection and the norm after it.
    // Backends may fuse them into one pass (the CPU does); the result is the two ops' bits.
    virtual void residual_layernorm_forward(Stream& s, const Tensor& residual, const Tensor& x,
                                            const Tensor& out, const Tensor& mean,
                                            const Tensor& rstd, const Tensor& weight,
                                            const Tensor& bias) {
        accumulate(s, residual, x);
        layernorm_forward(s, out, mean, rstd, residual, weight, bias);
    }
    // Accumulates: din += the input's gradient, dweight += the column sums of dout * xhat, dbias
    // += the column sums of dout (xhat = (in - mean) * rstd).
    virtual void layernorm_backward(Stream& s, const Tensor& din, const Tensor& dweight,
                                    const Tensor& dbias, const Tensor& dout, const Tensor& in,
                                    const Tensor& weight, const Tensor& mean,
                                    const Tensor& rstd) = 0;

    // Causal attention over qkv [B, T, 3C]: out [B, T, C], probabilities att [B, H, T, T] kept.
    virtual void attention_forward(Stream& s, const Tensor& out, const Tensor& att,
                                   const Tensor& qkv, int heads) = 0;
    // dqkv is overwritten.
    virtual void attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout,
                                    const Tensor& qkv, const Tensor& att, int heads) = 0;

    // Flash attention (FlashAttention-2's scheme): causal attention computed tile by tile with an
    // online softmax, so the B*H*T*T probabilities are never stored. Grouped-query: qkv
    // [B, T, (H + 2 Hkv) D] rows are [q: H D | k: Hkv D | v: Hkv D], H = heads, Hkv = kv_heads
    // dividing it, D = C / H; query head h reads kv head h / (H / Hkv) (consecutive query heads
    // share one, as Hugging Face's repeat_kv). kv_heads == heads is multi-head attention's
    // [B, T, 3C]. Forward writes out [B, T, C] and lse [B, H, T] (fp32): each query row's
    // log-sum-exp of its scaled scores, all that backward needs to recompute the probabilities.
    virtual void flash_attention_forward(Stream& s, const Tensor& out, const Tensor& lse,
                                         const Tensor& qkv, int heads, int kv_heads) = 0;
    // dqkv [B, T, (H + 2 Hkv) D] is overwritten (a kv head's dk, dv: the sums over its group of
    // query heads); out and lse are forward's. Deterministic: no atomics on the sums.
    virtual void flash_attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout,
                                          const Tensor& qkv, const Tensor& out, const Tensor& lse,
                                          int heads, int kv_heads) = 0;
    // Which flash kernels run for storage t and head_dim, as benchmarks name them ("cpu"; on CUDA
    // model/kernels/cuda/flash_attention_path.h's names).
    virtual std::string flash_attention_kernels(DType t, int head_dim) const = 0;

    // GELU, tanh form. Backward overwrites din with gelu'(in) * dout.
    virtual void gelu_forward(Stream& s, const Tensor& out, const Tensor& in) = 0;
    virtual void gelu_backward(Stream& s, const Tensor& din, const Tensor& in,
                               const Tensor& dout) = 0;

    // Llama's layers (issue 25), with the semantics of model/kernels/cpu/{rmsnorm,rope,swiglu}.h.
    // RMSNorm over the last dimension of in [N, C]: out = weight * in / rms(in); rstd [N] (fp32)
    // keeps each row's 1 / rms for backward, which accumulates: din += the input's gradient,
    // dweight += the column sums of dout * in * rstd.
    virtual void rmsnorm_forward(Stream& s, const Tensor& out, const Tensor& rstd, const Tensor& in,
                                 const Tensor& weight, float eps) = 0;
    virtual void rmsnorm_backward(Stream& s, const Tensor& din, const Tensor& dweight,
                                  const Tensor& dout, const Tensor& in, const Tensor& weight,
                                  const Tensor& rstd) = 0;
    // Rotary position embedding (Hugging Face's rotate-half layout), in place over the first
    // `heads` heads of head_dim (even) elements of each row of x [..., width] — q's and k's heads
    // side by side in a fused qkv row — row r at position r mod seq. Backward rotates the
    // gradient back (the inverse rotation), also in place.
    virtual void rope_forward(Stream& s, const Tensor& x, int seq, int heads, int head_dim,
                              const Rope& rope) = 0;
    virtual void rope_backward(Stream& s, const Tensor& dx, int seq, int heads, int head_dim,
                               const Rope& rope) = 0;
    // What every backend's rope_forward and rope_backward require of their arguments.
    static void check_rope_shape(const Tensor& x, int seq, int heads, int head_dim) {
        check(seq > 0 && heads >= 0 && head_dim > 0 && head_dim % 2 == 0 &&
                  std::int64_t(heads) * head_dim <= x.dim(x.shape.rank - 1),
              "internal: rope over " + std::to_string(heads) + " heads of " +
                  std::to_string(head_dim) + " (seq " + std::to_string(seq) + ") in rows of " +
                  std::to_string(x.dim(x.shape.rank - 1)));
    }
    // out = silu(gate) * up element-wise; backward overwrites dgate and dup.
    virtual void swiglu_forward(Stream& s, const Tensor& out, const Tensor& gate,
                                const Tensor& up) = 0;
    virtual void swiglu_backward(Stream& s, const Tensor& dgate, const Tensor& dup,
                                 const Tensor& dout, const Tensor& gate, const Tensor& up) = 0;

    // out [B, T, C] = wte[token] + wpe[t]; tokens [B, T] are device memory. A wpe (and dwpe)
    // without data is no position table (Llama): out = wte[token].
    virtual void embedding_forward(Stream& s, const Tensor& out, const std::uint16_t* tokens,
                                   const Tensor& wte, const Tensor& wpe) = 0;
    // dwte[token] += each position's dout row, dwpe[t] += the rows of position t over the batch;
    // deterministic (no atomics on the sums).
    virtual void embedding_backward(Stream& s, const Tensor& dwte, const Tensor& dwpe,
                                    const Tensor& dout, const std::uint16_t* tokens) = 0;

    // Mean cross-entropy of softmax(the first `vocab` columns of logits [N, Vp]) against targets
    // [N] (device memory), written to *loss (device memory); columns vocab..Vp-1 are the padded
    // vocabulary and take no part. With dlogits_scale != 0 the logits are overwritten with
    // (softmax - onehot) * dlogits_scale, the padded columns with 0: the fused backward.
    virtual void cross_entropy(Stream& s, const Tensor& logits, int vocab,
                               const std::uint16_t* targets, float dlogits_scale, double* loss) = 0;

    // dst += src (residual connections; gradient accumulation).
    virtual void accumulate(Stream& s, const Tensor& dst, const Tensor& src) = 0;
    // dst = src in dst's dtype (rounded to nearest even).
    virtual void convert(Stream& s, const Tensor& dst, const Tensor& src) = 0;
    virtual void fill(Stream& s, const Tensor& dst, float value) = 0;
    // *out = float(sum over the parts, in order, of every element squared, summed in double).
    virtual void squared_norm(Stream& s, const std::vector<Tensor>& parts, float* out) = 0;

    // --reproducible's exact sums (model/kernels/fixed_point.h; optim/exact_sum.h says why).
    // acc (int64) += round(src * 2^exponent) element-wise; *amax (device fp32) = max(*amax,
    // max |src|), a NaN counting as +Inf.
    virtual void fixed_accumulate(Stream& s, const Tensor& acc, const Tensor& src, int exponent,
                                  float* amax) = 0;
    // dst = acc * 2^-exponent / divisor, rounded once into dst's dtype.
    virtual void fixed_to_float(Stream& s, const Tensor& dst, const Tensor& acc, int exponent,
                                double divisor) = 0;
    // *out (device int64) += sum of round(src^2 * 2^exponent).
    virtual void fixed_squares(Stream& s, const Tensor& src, int exponent, std::int64_t* out) = 0;

    // AdamW on each of `tensors` (no two share memory): master, m, v (fp32) from grad (any
    // dtype) with the tensor's coefficients; then, where params has data, params = master rounded
    // to its dtype. One call for a whole update, so that a GPU launches a kernel per 32 tensors
    // rather than one per tensor; the bits are those of one tensor at a time.
    virtual void adamw(Stream& s, const std::vector<AdamWTensor>& tensors) = 0;
};

} // namespace shardlab
