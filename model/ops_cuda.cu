// Each op: read the shapes on the host, take scratch from the tracker, launch on the stream.
#include "model/ops_cuda.h"

#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_stream.h"
#include "core/error.h"
#include "model/flash_tuner.h"
#include "model/grouped_qkv.h"
#include "model/kernels/cuda/attention.h"
#include "model/kernels/cuda/flash_attention.h"
#include "model/kernels/cuda/gemm.h"
#include "model/kernels/cuda/gemm_epilogue.h"
#include "model/kernels/cuda/kernels.h"

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>

namespace shardlab {

namespace {
using cuda::stream_of;

int last_dim(const Tensor& t) {
    return int(t.dim(t.shape.rank - 1));
}
int rows(const Tensor& t) {
    return int(t.numel() / std::size_t(last_dim(t)));
}

#ifdef SHARDLAB_CUDA_EMU
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif
// The tuner's timed runs of each form (flash_tuner.h): the best of 3 on a GPU; one under the
// emulator, whose times only need to exist.
constexpr int kTunerRuns = kEmulated ? 1 : 3;

class CudaOps : public Ops {
  public:
    CudaOps(MemoryTracker& tracker, LinearPath path, cuda::TensorCoreFlash flash)
        : tracker_(tracker), epilogues_(path == LinearPath::cublaslt), flash_(flash),
          tuner_(kTunerRuns), blas_(epilogues_) {}
    CudaOps(const CudaOps&) = delete;
    CudaOps& operator=(const CudaOps&) = delete;

    void gemm(Stream& s, const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor& c,
              float alpha, float beta, const Tensor* bias) override {
        const int r = c.shape.rank;
        check(r == 2 || r == 3, "internal: gemm takes 2-D or 3-D tensors");
        check(!bias || beta == 0.0f, "internal: gemm with a bias takes beta = 0");
        check(a.dtype == c.dtype && b.dtype == c.dtype, "internal: gemm operands of mixed dtypes");
        const int batch = r == 3 ? int(c.dim(0)) : 1;
        const int M = int(c.dim(r - 2)), N = int(c.dim(r - 1));
        const int K = ta ? int(a.dim(r - 2)) : int(a.dim(r - 1));
        if (bias && batch == 1 &&
            epilogue(s, a, ta, b, tb, c, alpha, 0.0f, {cuda::Epilogue::bias, bias->data, c.dtype}))
            return;
        // Start from the bias and add the product onto it: one rounding in fp32; in 16-bit a GPU's
        // cuBLAS may round the product first (gemm_epilogue.h), as its BIAS epilogue does.
        if (bias) {
            cuda::bias_rows(stream_of(s), c.data, bias->data, batch * M, N, c.dtype);
            beta = 1.0f;
        }
        cuda::gemm(blas_, stream_of(s), c.dtype, c.dtype, ta, tb, M, N, K, alpha,
                   {a.data, last_dim(a), (long long)(a.numel() / batch)},
                   {b.data, last_dim(b), (long long)(b.numel() / batch)}, beta, c.data, N,
                   (long long)(c.numel() / batch), batch);
    }

    void bias_grad(Stream& s, const Tensor& dbias, const Tensor& dout) override {
        const int R = rows(dout), C = last_dim(dout);
        Allocation partials = scratch(s, std::size_t(cuda::column_chunks(R)) * C * sizeof(float));
        cuda::add_column_sums(stream_of(s), dbias.data, dout.data, R, C, dout.dtype,
                              partials.as<float>());
    }

    void linear_gelu_forward(Stream& s, const Tensor& a, const Tensor& w, const Tensor& bias,
                             const Tensor& pre, const Tensor& out) override {
        if (!epilogue(
                s, a, false, w, false, out, 1.0f, 0.0f,
                {cuda::Epilogue::gelu_aux_bias, bias.data, out.dtype, pre.data, last_dim(pre)}))
            Ops::linear_gelu_forward(s, a, w, bias, pre, out);
    }

    // The epilogue writes the bias gradient into scratch of D's type (cuBLASLt refuses an fp32
    // one beside a 16-bit D: INVALID_VALUE on the H200), which is then added into dbias: in 16-bit
    // two roundings (the sums', then the add's), where bias_grad has one.
    // linear_gelu_backward takes no epilogue: on the H200 cuBLASLt's DGELU_BGRAD took 452 us a
    // call for GPT-2's, the separate GEMM + GELU backward + column sums 251 (docs/BENCHMARKS.md).
    // After the GEMM, the GELU backward and the bias gradient are one kernel (gelu.cu): Ops's
    // three calls' bits, one pass over din fewer.
    void linear_gelu_backward(Stream& s, const Tensor& dout, const Tensor& w, const Tensor& pre,
                              const Tensor& din, const Tensor& dbias) override {
        gemm(s, dout, false, w, true, din, 1.0f, 0.0f, nullptr);
        const int R = rows(din), C = last_dim(din);
        Allocation partials = scratch(s, std::size_t(cuda::column_chunks(R)) * C * sizeof(float));
        cuda::gelu_backward_bias_grad(stream_of(s), din.data, dbias.data, pre.data, R, C, din.dtype,
                                      partials.as<float>());
    }
    void linear_param_grads(Stream& s, const Tensor& a, const Tensor& dout, const Tensor& dw,
                            const Tensor& dbias) override {
        Allocation sums = scratch(s, dbias.bytes());
        if (dbias.dtype != dw.dtype ||
            !epilogue(s, a, true, dout, false, dw, 1.0f, 1.0f,
                      {cuda::Epilogue::bias_grad_of_b, sums.data(), dw.dtype}))
            return Ops::linear_param_grads(s, a, dout, dw, dbias);
        cuda::accumulate(stream_of(s), dbias.data, sums.data(), dbias.numel(), dbias.dtype);
    }

    void layernorm_forward(Stream& s, const Tensor& out, const Tensor& mean, const Tensor& rstd,
                           const Tensor& in, const Tensor& weight, const Tensor& bias) override {
        cuda::layernorm_forward(stream_of(s), out.data, mean.as<float>(), rstd.as<float>(), in.data,
                                weight.data, bias.data, rows(in), last_dim(in), in.dtype);
    }

    void residual_layernorm_forward(Stream& s, const Tensor& residual, const Tensor& x,
                                    const Tensor& out, const Tensor& mean, const Tensor& rstd,
                                    const Tensor& weight, const Tensor& bias) override {
        cuda::residual_layernorm_forward(stream_of(s), residual.data, x.data, out.data,
                                         mean.as<float>(), rstd.as<float>(), weight.data, bias.data,
                                         rows(x), last_dim(x), x.dtype);
    }

    void layernorm_backward(Stream& s, const Tensor& din, const Tensor& dweight,
                            const Tensor& dbias, const Tensor& dout, const Tensor& in,
                            const Tensor& weight, const Tensor& mean, const Tensor& rstd) override {
        const int N = rows(in), C = last_dim(in);
        Allocation partials =
            scratch(s, 2 * std::size_t(cuda::column_chunks(N)) * C * sizeof(float));
        cuda::layernorm_backward(stream_of(s), din.data, dweight.data, dbias.data, dout.data,
                                 in.data, weight.data, mean.as<const float>(),
                                 rstd.as<const float>(), N, C, in.dtype, partials.as<float>());
    }

    void attention_forward(Stream& s, const Tensor& out, const Tensor& att, const Tensor& qkv,
                           int heads) override {
        const int B = int(qkv.dim(0)), T = int(qkv.dim(1)), C = int(qkv.dim(2)) / 3;
        Allocation scores = scratch(s, std::size_t(heads) * T * T * sizeof(float));
        cuda::attention_forward(blas_, stream_of(s), out.data, att.data, qkv.data, B, T, C, heads,
                                qkv.dtype, scores.as<float>());
    }

    void attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout, const Tensor& qkv,
                            const Tensor& att, int heads) override {
        const int B = int(qkv.dim(0)), T = int(qkv.dim(1)), C = int(qkv.dim(2)) / 3;
        const std::size_t per_head = std::size_t(heads) * T * T;
        Allocation dprob = scratch(s, per_head * sizeof(float));
        Allocation dscore = scratch(s, per_head * dtype_size(qkv.dtype));
        cuda::attention_backward(blas_, stream_of(s), dqkv.data, dout.data, qkv.data, att.data, B,
                                 T, C, heads, qkv.dtype, dprob.as<float>(), dscore.data());
    }

    void flash_attention_forward(Stream& s, const Tensor& out, const Tensor& lse, const Tensor& qkv,
                                 int heads, int kv_heads) override {
        const FlashShape shape = flash_shape(qkv, heads, kv_heads);
        const auto run = [&](const cuda::FlashKernels& k) {
            cuda::flash_attention_forward(stream_of(s), out.data, lse.as<float>(), qkv.data,
                                          shape.B, shape.T, shape.C, heads, kv_heads, qkv.dtype, k);
        };
        if (tuned(shape)) return tuner_.forward(s, shape, run);
        run(cuda::kernels_of(flash_));
    }

    void flash_attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout,
                                  const Tensor& qkv, const Tensor& out, const Tensor& lse,
                                  int heads, int kv_heads) override {
        const FlashShape shape = flash_shape(qkv, heads, kv_heads);
        Allocation row_dots = scratch(s, std::size_t(shape.B) * heads * shape.T * sizeof(float));
        const auto run = [&](const cuda::FlashKernels& k) {
            cuda::flash_attention_backward(stream_of(s), dqkv.data, dout.data, qkv.data, out.data,
                                           lse.as<const float>(), shape.B, shape.T, shape.C, heads,
                                           kv_heads, qkv.dtype, k, row_dots.as<float>());
        };
        if (tuned(shape)) return tuner_.backward(s, shape, run);
        run(cuda::kernels_of(flash_));
    }

    std::string flash_attention_kernels(DType t, int head_dim) const override {
        const std::string name = cuda::flash_kernels_name(t, head_dim, flash_);
        return name == "auto" ? tuner_.describe(t, head_dim) : name;
    }

    void gelu_forward(Stream& s, const Tensor& out, const Tensor& in) override {
        cuda::gelu_forward(stream_of(s), out.data, in.data, in.numel(), in.dtype);
    }

    void gelu_backward(Stream& s, const Tensor& din, const Tensor& in,
                       const Tensor& dout) override {
        cuda::gelu_backward(stream_of(s), din.data, in.data, dout.data, in.numel(), in.dtype);
    }

    void rmsnorm_forward(Stream& s, const Tensor& out, const Tensor& rstd, const Tensor& in,
                         const Tensor& weight, float eps) override {
        cuda::rmsnorm_forward(stream_of(s), out.data, rstd.as<float>(), in.data, weight.data,
                              rows(in), last_dim(in), eps, in.dtype);
    }

    void rmsnorm_backward(Stream& s, const Tensor& din, const Tensor& dweight, const Tensor& dout,
                          const Tensor& in, const Tensor& weight, const Tensor& rstd) override {
        const int N = rows(in), C = last_dim(in);
        Allocation partials = scratch(s, std::size_t(cuda::column_chunks(N)) * C * sizeof(float));
        cuda::rmsnorm_backward(stream_of(s), din.data, dweight.data, dout.data, in.data,
                               weight.data, rstd.as<const float>(), N, C, in.dtype,
                               partials.as<float>());
    }

    void rope_forward(Stream& s, const Tensor& x, int seq, int heads, int head_dim,
                      const Rope& rope) override {
        check_rope_shape(x, seq, heads, head_dim);
        cuda::rope_forward(stream_of(s), x.data, rows(x), seq, heads, head_dim, last_dim(x), rope,
                           x.dtype);
    }

    void rope_backward(Stream& s, const Tensor& dx, int seq, int heads, int head_dim,
                       const Rope& rope) override {
        check_rope_shape(dx, seq, heads, head_dim);
        cuda::rope_backward(stream_of(s), dx.data, rows(dx), seq, heads, head_dim, last_dim(dx),
                            rope, dx.dtype);
    }

    void swiglu_forward(Stream& s, const Tensor& out, const Tensor& gate,
                        const Tensor& up) override {
        cuda::swiglu_forward(stream_of(s), out.data, gate.data, up.data, gate.numel(), gate.dtype);
    }

    void swiglu_backward(Stream& s, const Tensor& dgate, const Tensor& dup, const Tensor& dout,
                         const Tensor& gate, const Tensor& up) override {
        cuda::swiglu_backward(stream_of(s), dgate.data, dup.data, dout.data, gate.data, up.data,
                              gate.numel(), gate.dtype);
    }

    void embedding_forward(Stream& s, const Tensor& out, const std::uint16_t* tokens,
                           const Tensor& wte, const Tensor& wpe) override {
        cuda::embedding_forward(stream_of(s), out.data, tokens, wte.data, wpe.data, int(out.dim(0)),
                                int(out.dim(1)), int(out.dim(2)), out.dtype);
    }

    void embedding_backward(Stream& s, const Tensor& dwte, const Tensor& dwpe, const Tensor& dout,
                            const std::uint16_t* tokens) override {
        const int B = int(dout.dim(0)), T = int(dout.dim(1)), C = int(dout.dim(2));
        Allocation sorted = scratch(s, cuda::embedding_backward_scratch(B * T));
        cuda::embedding_backward(stream_of(s), dwte.data, dwpe.data, dout.data, tokens, B, T, C,
                                 dout.dtype, sorted.data());
    }

    void cross_entropy(Stream& s, const Tensor& logits, int vocab, const std::uint16_t* targets,
                       float dlogits_scale, double* loss) override {
        const int N = rows(logits);
        check(vocab >= 1 && vocab <= last_dim(logits),
              "internal: cross_entropy's vocab is outside the logits' columns");
        Allocation row_losses = scratch(s, std::size_t(N) * sizeof(double));
        cuda::cross_entropy(stream_of(s), logits.data, targets, N, vocab, last_dim(logits),
                            dlogits_scale, row_losses.as<double>(), loss, logits.dtype);
    }

    void accumulate(Stream& s, const Tensor& dst, const Tensor& src) override {
        if (dst.dtype == DType::i64) // --reproducible's exact sums
            return cuda::fixed_add(stream_of(s), dst.as<std::int64_t>(),
                                   src.as<const std::int64_t>(), dst.numel());
        cuda::accumulate(stream_of(s), dst.data, src.data, dst.numel(), dst.dtype);
    }

    void convert(Stream& s, const Tensor& dst, const Tensor& src) override {
        cuda::convert(stream_of(s), dst.data, dst.dtype, src.data, src.dtype, src.numel());
    }

    void fill(Stream& s, const Tensor& dst, float value) override {
        if (dst.dtype == DType::i64) { // --reproducible's sums start at zero
            check(value == 0.0f, "internal: an int64 buffer is only cleared");
            cuda::check_cuda(cudaMemsetAsync(dst.data, 0, dst.bytes(), stream_of(s)),
                             "cudaMemsetAsync");
            return;
        }
        cuda::fill(stream_of(s), dst.data, dst.dtype, dst.numel(), value);
    }

    void squared_norm(Stream& s, const std::vector<Tensor>& parts, float* out) override {
        std::vector<cuda::NormInput> inputs;
        for (const Tensor& p : parts) inputs.push_back({p.data, p.numel(), p.dtype});
        Allocation partials =
            scratch(s, cuda::squared_norm_scratch(inputs.data(), inputs.size()) * sizeof(double));
        cuda::squared_norm(stream_of(s), inputs.data(), inputs.size(), partials.as<double>(), out);
    }

    void fixed_accumulate(Stream& s, const Tensor& acc, const Tensor& src, int exponent,
                          float* amax) override {
        Allocation partials = scratch(s, cuda::fixed_scratch_bytes(src.numel()));
        cuda::fixed_accumulate(stream_of(s), acc.as<std::int64_t>(), src.data, src.dtype,
                               src.numel(), exponent, amax, partials.data());
    }

    void fixed_to_float(Stream& s, const Tensor& dst, const Tensor& acc, int exponent,
                        double divisor) override {
        cuda::fixed_to_float(stream_of(s), dst.data, dst.dtype, acc.as<const std::int64_t>(),
                             dst.numel(), exponent, divisor);
    }

    void fixed_squares(Stream& s, const Tensor& src, int exponent, std::int64_t* out) override {
        Allocation partials = scratch(s, cuda::fixed_scratch_bytes(src.numel()));
        cuda::fixed_squares(stream_of(s), src.data, src.dtype, src.numel(), exponent, out,
                            partials.data());
    }

    void adamw(Stream& s, const std::vector<AdamWTensor>& tensors) override {
        std::vector<cuda::AdamWInput> inputs;
        inputs.reserve(tensors.size());
        for (const AdamWTensor& x : tensors)
            inputs.push_back({x.master.as<float>(), x.m.as<float>(), x.v.as<float>(), x.grad.data,
                              x.grad.dtype, x.params.data,
                              x.params.data ? x.params.dtype : DType::f32, x.master.numel(), x.k});
        cuda::adamw(stream_of(s), inputs.data(), inputs.size());
    }

  private:
    // c = epilogue(alpha op(a) op(b) + beta c) on cuBLASLt, 2-D operands of c's dtype; false when
    // the epilogues are off or cuBLASLt cannot run the combination (nothing enqueued then).
    bool epilogue(Stream& s, const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor& c,
                  float alpha, float beta, const cuda::EpilogueArgs& e) {
        if (!epilogues_ || c.shape.rank != 2 || a.dtype != c.dtype || b.dtype != c.dtype)
            return false;
        if (e.aux && e.aux_ld % 8 != 0) return false; // cuBLASLt's rule for aux
        const int M = int(c.dim(0)), N = int(c.dim(1)), K = ta ? int(a.dim(0)) : int(a.dim(1));
        if (M == 0 || N == 0 || K == 0) return false;
        Allocation workspace; // tracked: the workspace category; released in stream order
        auto take = [&](std::size_t bytes) {
            workspace = scratch(s, bytes);
            return workspace.data();
        };
        return cuda::gemm_epilogue(blas_, stream_of(s), c.dtype, ta, tb, M, N, K, alpha,
                                   {a.data, last_dim(a)}, {b.data, last_dim(b)}, beta, c.data, N, e,
                                   take);
    }

    static FlashShape flash_shape(const Tensor& qkv, int heads, int kv_heads) {
        const int C = grouped_qkv_width(qkv, heads, kv_heads);
        return {qkv.dtype, int(qkv.dim(0)), int(qkv.dim(1)), C, heads, kv_heads};
    }
    // Whether the tuner picks the mma kernels' forms for this call: asked to, and they have forms.
    bool tuned(const FlashShape& f) const {
        return flash_ == cuda::TensorCoreFlash::tuned && f.B > 0 && f.T > 0 &&
               cuda::has_mma_forms(f.dtype, f.head_dim());
    }

    // Released (reusable by later work) once the stream has passed the ops enqueued with it.
    Allocation scratch(Stream& s, std::size_t bytes) {
        return tracker_.allocate(bytes, Category::workspace, s);
    }

    MemoryTracker& tracker_;
    bool epilogues_;
    cuda::TensorCoreFlash flash_;
    FlashTuner tuner_;  // the forms of `tuned`
    cuda::Cublas blas_; // opened here: a CPU-only process never loads cuBLAS
};

// $var names one of the ways (unset: the first, the default); anything else is a usage error
// naming them all.
template <typename Way>
Way way_from_environment(const char* var, std::initializer_list<std::pair<const char*, Way>> ways) {
    const char* v = std::getenv(var);
    if (!v) return ways.begin()->second;
    std::string names;
    for (const auto& [name, way] : ways) {
        if (std::string(v) == name) return way;
        names += (names.empty() ? "" : ", ") + std::string(name);
    }
    throw UsageError(std::string(var) + "=" + v + ": expected one of " + names + " (" +
                     ways.begin()->first + " is the default)");
}
} // namespace

LinearPath linear_path_from_environment() {
    return way_from_environment<LinearPath>(
        "SHARDLAB_CUDA_EPILOGUES",
        {{"cublaslt", LinearPath::cublaslt}, {"separate", LinearPath::separate}});
}

cuda::TensorCoreFlash tensor_core_flash_from_environment() {
    using cuda::TensorCoreFlash;
    // The emulator's times say nothing of a GPU's, and timing every form of every new shape would
    // run its flash tests several times over: there mma is the default, auto on a GPU.
    const std::pair<const char*, TensorCoreFlash> mma{"mma", TensorCoreFlash::mma},
        tuned{"auto", TensorCoreFlash::tuned};
    return way_from_environment<TensorCoreFlash>("SHARDLAB_CUDA_FLASH",
                                                 {kEmulated ? mma : tuned,
                                                  kEmulated ? tuned : mma,
                                                  {"wmma", TensorCoreFlash::wmma},
                                                  {"mma_regs", TensorCoreFlash::mma_regs},
                                                  {"mma_wide", TensorCoreFlash::mma_wide}});
}

std::unique_ptr<Ops> make_cuda_ops(MemoryTracker& tracker, LinearPath path,
                                   cuda::TensorCoreFlash flash) {
    return std::make_unique<CudaOps>(tracker, path, flash);
}

} // namespace shardlab
