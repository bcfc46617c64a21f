// Each op: read the shapes on the host, take scratch from the tracker, launch on the stream.
#include "model/ops_cuda.h"

#include "core/cuda/cuda_stream.h"
#include "core/error.h"
#include "model/kernels/cuda/attention.h"
#include "model/kernels/cuda/flash_attention.h"
#include "model/kernels/cuda/gemm.h"
#include "model/kernels/cuda/kernels.h"

namespace shardlab {

namespace {
using cuda::stream_of;

int last_dim(const Tensor& t) {
    return int(t.dim(t.shape.rank - 1));
}
int rows(const Tensor& t) {
    return int(t.numel() / std::size_t(last_dim(t)));
}

class CudaOps : public Ops {
  public:
    explicit CudaOps(MemoryTracker& tracker) : tracker_(tracker) {
        cuda::check_cublas(cublasCreate(&blas_), "cublasCreate");
    }
    ~CudaOps() override { cublasDestroy(blas_); }
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
        if (bias) { // start from the bias and add the product onto it: one rounding
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
                                 int heads) override {
        const int B = int(qkv.dim(0)), T = int(qkv.dim(1)), C = int(qkv.dim(2)) / 3;
        cuda::flash_attention_forward(stream_of(s), out.data, lse.as<float>(), qkv.data, B, T, C,
                                      heads, qkv.dtype);
    }

    void flash_attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout,
                                  const Tensor& qkv, const Tensor& out, const Tensor& lse,
                                  int heads) override {
        const int B = int(qkv.dim(0)), T = int(qkv.dim(1)), C = int(qkv.dim(2)) / 3;
        Allocation row_dots = scratch(s, std::size_t(B) * heads * T * sizeof(float));
        cuda::flash_attention_backward(stream_of(s), dqkv.data, dout.data, qkv.data, out.data,
                                       lse.as<const float>(), B, T, C, heads, qkv.dtype,
                                       row_dots.as<float>());
    }

    void gelu_forward(Stream& s, const Tensor& out, const Tensor& in) override {
        cuda::gelu_forward(stream_of(s), out.data, in.data, in.numel(), in.dtype);
    }

    void gelu_backward(Stream& s, const Tensor& din, const Tensor& in,
                       const Tensor& dout) override {
        cuda::gelu_backward(stream_of(s), din.data, in.data, dout.data, in.numel(), in.dtype);
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
        cuda::accumulate(stream_of(s), dst.data, src.data, dst.numel(), dst.dtype);
    }

    void convert(Stream& s, const Tensor& dst, const Tensor& src) override {
        cuda::convert(stream_of(s), dst.data, dst.dtype, src.data, src.dtype, src.numel());
    }

    void fill(Stream& s, const Tensor& dst, float value) override {
        cuda::fill(stream_of(s), dst.data, dst.dtype, dst.numel(), value);
    }

    void squared_norm(Stream& s, const std::vector<Tensor>& parts, float* out) override {
        std::size_t total = 0;
        for (const Tensor& p : parts) total += cuda::squared_norm_scratch(p.numel());
        Allocation partials = scratch(s, total * sizeof(double));
        std::size_t at = 0;
        for (const Tensor& p : parts) {
            cuda::squared_norm_part(stream_of(s), p.data, p.numel(), p.dtype,
                                    partials.as<double>() + at);
            at += cuda::squared_norm_scratch(p.numel());
        }
        cuda::squared_norm_finish(stream_of(s), partials.as<double>(), total, out);
    }

    void adamw(Stream& s, const Tensor& master, const Tensor& m, const Tensor& v,
               const Tensor& grad, const Tensor* params, const AdamWStep& k) override {
        cuda::adamw(stream_of(s), master.as<float>(), m.as<float>(), v.as<float>(), grad.data,
                    grad.dtype, params ? params->data : nullptr,
                    params ? params->dtype : DType::f32, master.numel(), k);
    }

  private:
    // Released (reusable by later work) once the stream has passed the ops enqueued with it.
    Allocation scratch(Stream& s, std::size_t bytes) {
        return tracker_.allocate(bytes, Category::workspace, s);
    }

    MemoryTracker& tracker_;
    cublasHandle_t blas_ = nullptr;
};
} // namespace

std::unique_ptr<Ops> make_cuda_ops(MemoryTracker& tracker) {
    return std::make_unique<CudaOps>(tracker);
}

} // namespace shardlab
