// Each op: read the shapes on the host, pick the kernel for the dtype, enqueue it.
#include "model/ops_cpu.h"

#include "core/error.h"
#include "model/grouped_qkv.h"
#include "model/kernels/cpu/adamw.h"
#include "model/kernels/cpu/attention.h"
#include "model/kernels/cpu/cross_entropy.h"
#include "model/kernels/cpu/embedding.h"
#include "model/kernels/cpu/fixed_point.h"
#include "model/kernels/cpu/flash_attention.h"
#include "model/kernels/cpu/gelu.h"
#include "model/kernels/cpu/layernorm.h"
#include "model/kernels/cpu/linear.h"
#include "model/kernels/cpu/residual.h"
#include "model/kernels/cpu/rmsnorm.h"
#include "model/kernels/cpu/rope.h"
#include "model/kernels/cpu/squared_norm.h"
#include "model/kernels/cpu/swiglu.h"

#include <cstring>

namespace shardlab {

namespace {
// Calls fn(T{}) with T the kernels' storage type for dtype t.
template <typename Fn>
void for_dtype(DType t, Fn&& fn) {
    switch (t) {
    case DType::f32:
        return fn(float{});
    case DType::bf16:
        return fn(bf16_t{});
    case DType::f16:
        return fn(f16_t{});
    case DType::i64: // summed by its own kernels (fixed_point_*), never a model tensor
        throw Error("internal: int64 is not a kernel storage type");
    }
}

int last_dim(const Tensor& t) {
    return int(t.dim(t.shape.rank - 1));
}
int rows(const Tensor& t) {
    return int(t.numel() / std::size_t(last_dim(t)));
}
} // namespace

void CpuOps::gemm(Stream& s, const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor& c,
                  float alpha, float beta, const Tensor* bias) {
    const int r = c.shape.rank;
    check(r == 2 || r == 3, "internal: gemm takes 2-D or 3-D tensors");
    check(!bias || beta == 0.0f, "internal: gemm with a bias takes beta = 0");
    const int batch = r == 3 ? int(c.dim(0)) : 1;
    cpu::MatmulShape m;
    m.dtype = c.dtype;
    m.trans_a = ta, m.trans_b = tb;
    m.M = int(c.dim(r - 2)), m.N = int(c.dim(r - 1));
    m.K = ta ? int(a.dim(r - 2)) : int(a.dim(r - 1));
    m.lda = last_dim(a), m.ldb = last_dim(b), m.ldc = m.N;
    m.alpha = alpha, m.beta = beta, m.bias = bias != nullptr;
    Allocation ws;
    if (const std::size_t bytes = gemm_->workspace_bytes(m))
        ws = tracker_.allocate(bytes, Category::workspace, s);
    const std::size_t es = dtype_size(c.dtype);
    const std::size_t sa = a.numel() / batch * es, sb = b.numel() / batch * es,
                      sc = c.numel() / batch * es;
    s.enqueue([g = gemm_, m, batch, sa, sb, sc, A = static_cast<const char*>(a.data),
               B = static_cast<const char*>(b.data), C = static_cast<char*>(c.data),
               bias_p = bias ? bias->data : nullptr, w = ws.as<void>()] {
        for (int i = 0; i < batch; ++i) g->run(m, A + i * sa, B + i * sb, bias_p, C + i * sc, w);
    });
}

void CpuOps::bias_grad(Stream& s, const Tensor& dbias, const Tensor& dout) {
    for_dtype(dout.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([db = dbias.as<T>(), d = dout.as<const T>(), n = rows(dout), c = last_dim(dout)] {
            cpu::add_column_sums(db, d, n, c);
        });
    });
}

void CpuOps::layernorm_forward(Stream& s, const Tensor& out, const Tensor& mean, const Tensor& rstd,
                               const Tensor& in, const Tensor& weight, const Tensor& bias) {
    for_dtype(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([o = out.as<T>(), m = mean.as<float>(), r = rstd.as<float>(),
                   x = in.as<const T>(), w = weight.as<const T>(), b = bias.as<const T>(),
                   n = rows(in),
                   c = last_dim(in)] { cpu::layernorm_forward(o, m, r, x, w, b, n, c); });
    });
}

void CpuOps::residual_layernorm_forward(Stream& s, const Tensor& residual, const Tensor& x,
                                        const Tensor& out, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& weight, const Tensor& bias) {
    for_dtype(x.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue(
            [res = residual.as<T>(), xp = x.as<const T>(), o = out.as<T>(), m = mean.as<float>(),
             r = rstd.as<float>(), w = weight.as<const T>(), b = bias.as<const T>(), n = rows(x),
             c = last_dim(x)] { cpu::residual_layernorm_forward(res, xp, o, m, r, w, b, n, c); });
    });
}

void CpuOps::layernorm_backward(Stream& s, const Tensor& din, const Tensor& dweight,
                                const Tensor& dbias, const Tensor& dout, const Tensor& in,
                                const Tensor& weight, const Tensor& mean, const Tensor& rstd) {
    for_dtype(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue(
            [dx = din.as<T>(), dw = dweight.as<T>(), db = dbias.as<T>(), dy = dout.as<const T>(),
             x = in.as<const T>(), w = weight.as<const T>(), m = mean.as<const float>(),
             r = rstd.as<const float>(), n = rows(in),
             c = last_dim(in)] { cpu::layernorm_backward(dx, dw, db, dy, x, w, m, r, n, c); });
    });
}

void CpuOps::attention_forward(Stream& s, const Tensor& out, const Tensor& att, const Tensor& qkv,
                               int heads) {
    for_dtype(qkv.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([g = gemm_, o = out.as<T>(), p = att.as<T>(), q = qkv.as<const T>(),
                   B = int(qkv.dim(0)), T_ = int(qkv.dim(1)), C = int(qkv.dim(2)) / 3,
                   heads] { cpu::attention_forward(o, p, q, B, T_, C, heads, g->tiles()); });
    });
}

void CpuOps::attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout,
                                const Tensor& qkv, const Tensor& att, int heads) {
    for_dtype(qkv.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([g = gemm_, dq = dqkv.as<T>(), d = dout.as<const T>(), q = qkv.as<const T>(),
                   p = att.as<const T>(), B = int(qkv.dim(0)), T_ = int(qkv.dim(1)),
                   C = int(qkv.dim(2)) / 3,
                   heads] { cpu::attention_backward(dq, d, q, p, B, T_, C, heads, g->tiles()); });
    });
}

void CpuOps::flash_attention_forward(Stream& s, const Tensor& out, const Tensor& lse,
                                     const Tensor& qkv, int heads, int kv_heads) {
    const int C = grouped_qkv_width(qkv, heads, kv_heads);
    for_dtype(qkv.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([g = gemm_, o = out.as<T>(), l = lse.as<float>(), q = qkv.as<const T>(),
                   B = int(qkv.dim(0)), T_ = int(qkv.dim(1)), C, heads, kv_heads] {
            cpu::flash_attention_forward(o, l, q, B, T_, C, heads, kv_heads, g->tiles());
        });
    });
}

void CpuOps::flash_attention_backward(Stream& s, const Tensor& dqkv, const Tensor& dout,
                                      const Tensor& qkv, const Tensor& out, const Tensor& lse,
                                      int heads, int kv_heads) {
    const int C = grouped_qkv_width(qkv, heads, kv_heads);
    for_dtype(qkv.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([g = gemm_, dq = dqkv.as<T>(), d = dout.as<const T>(), q = qkv.as<const T>(),
                   o = out.as<const T>(), l = lse.as<const float>(), B = int(qkv.dim(0)),
                   T_ = int(qkv.dim(1)), C, heads, kv_heads] {
            cpu::flash_attention_backward(dq, d, q, o, l, B, T_, C, heads, kv_heads, g->tiles());
        });
    });
}

void CpuOps::gelu_forward(Stream& s, const Tensor& out, const Tensor& in) {
    for_dtype(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([o = out.as<T>(), x = in.as<const T>(), n = in.numel()] {
            cpu::gelu_forward(o, x, n);
        });
    });
}

void CpuOps::gelu_backward(Stream& s, const Tensor& din, const Tensor& in, const Tensor& dout) {
    for_dtype(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([dx = din.as<T>(), x = in.as<const T>(), dy = dout.as<const T>(),
                   n = in.numel()] { cpu::gelu_backward(dx, x, dy, n); });
    });
}

void CpuOps::rmsnorm_forward(Stream& s, const Tensor& out, const Tensor& rstd, const Tensor& in,
                             const Tensor& weight, float eps) {
    for_dtype(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([o = out.as<T>(), r = rstd.as<float>(), x = in.as<const T>(),
                   w = weight.as<const T>(), n = rows(in), c = last_dim(in),
                   eps] { cpu::rmsnorm_forward(o, r, x, w, n, c, eps); });
    });
}

void CpuOps::rmsnorm_backward(Stream& s, const Tensor& din, const Tensor& dweight,
                              const Tensor& dout, const Tensor& in, const Tensor& weight,
                              const Tensor& rstd) {
    for_dtype(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([dx = din.as<T>(), dw = dweight.as<T>(), dy = dout.as<const T>(),
                   x = in.as<const T>(), w = weight.as<const T>(), r = rstd.as<const float>(),
                   n = rows(in),
                   c = last_dim(in)] { cpu::rmsnorm_backward(dx, dw, dy, x, w, r, n, c); });
    });
}

void CpuOps::rope_forward(Stream& s, const Tensor& x, int seq, int heads, int head_dim,
                          const Rope& rope) {
    check_rope_shape(x, seq, heads, head_dim);
    for_dtype(x.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([p = x.as<T>(), n = rows(x), w = last_dim(x), seq, heads, head_dim, rope] {
            cpu::rope_forward(p, n, seq, heads, head_dim, w, rope);
        });
    });
}

void CpuOps::rope_backward(Stream& s, const Tensor& dx, int seq, int heads, int head_dim,
                           const Rope& rope) {
    check_rope_shape(dx, seq, heads, head_dim);
    for_dtype(dx.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([p = dx.as<T>(), n = rows(dx), w = last_dim(dx), seq, heads, head_dim, rope] {
            cpu::rope_backward(p, n, seq, heads, head_dim, w, rope);
        });
    });
}

void CpuOps::swiglu_forward(Stream& s, const Tensor& out, const Tensor& gate, const Tensor& up) {
    for_dtype(gate.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([o = out.as<T>(), g = gate.as<const T>(), u = up.as<const T>(),
                   n = gate.numel()] { cpu::swiglu_forward(o, g, u, n); });
    });
}

void CpuOps::swiglu_backward(Stream& s, const Tensor& dgate, const Tensor& dup, const Tensor& dout,
                             const Tensor& gate, const Tensor& up) {
    for_dtype(gate.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([dg = dgate.as<T>(), du = dup.as<T>(), dy = dout.as<const T>(),
                   g = gate.as<const T>(), u = up.as<const T>(),
                   n = gate.numel()] { cpu::swiglu_backward(dg, du, dy, g, u, n); });
    });
}

void CpuOps::embedding_forward(Stream& s, const Tensor& out, const std::uint16_t* tokens,
                               const Tensor& wte, const Tensor& wpe) {
    for_dtype(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([o = out.as<T>(), tokens, te = wte.as<const T>(), pe = wpe.as<const T>(),
                   B = int(out.dim(0)), T_ = int(out.dim(1)),
                   C = int(out.dim(2))] { cpu::embedding_forward(o, tokens, te, pe, B, T_, C); });
    });
}

void CpuOps::embedding_backward(Stream& s, const Tensor& dwte, const Tensor& dwpe,
                                const Tensor& dout, const std::uint16_t* tokens) {
    for_dtype(dout.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue(
            [te = dwte.as<T>(), pe = dwpe.as<T>(), d = dout.as<const T>(), tokens,
             B = int(dout.dim(0)), T_ = int(dout.dim(1)), C = int(dout.dim(2)),
             V = int(dwte.dim(0))] { cpu::embedding_backward(te, pe, d, tokens, B, T_, C, V); });
    });
}

void CpuOps::cross_entropy(Stream& s, const Tensor& logits, int vocab, const std::uint16_t* targets,
                           float dlogits_scale, double* loss) {
    check(vocab >= 1 && vocab <= last_dim(logits),
          "internal: cross_entropy's vocab is outside the logits' columns");
    for_dtype(logits.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([z = logits.as<T>(), targets, n = rows(logits), vocab, ld = last_dim(logits),
                   dlogits_scale, loss] {
            *loss = cpu::softmax_cross_entropy(z, targets, n, vocab, ld, dlogits_scale);
        });
    });
}

void CpuOps::accumulate(Stream& s, const Tensor& dst, const Tensor& src) {
    if (dst.dtype == DType::i64) { // --reproducible's exact sums: integer adds
        s.enqueue([d = dst.as<std::int64_t>(), x = src.as<const std::int64_t>(), n = dst.numel()] {
            for (std::size_t i = 0; i < n; ++i) d[i] += x[i];
        });
        return;
    }
    for_dtype(dst.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([d = dst.as<T>(), x = src.as<const T>(), n = dst.numel()] {
            cpu::accumulate(d, x, n);
        });
    });
}

void CpuOps::convert(Stream& s, const Tensor& dst, const Tensor& src) {
    s.enqueue([d = dst.data, dt = dst.dtype, x = src.data, st = src.dtype, n = src.numel()] {
        shardlab::convert(x, st, d, dt, n);
    });
}

void CpuOps::fill(Stream& s, const Tensor& dst, float value) {
    s.enqueue([d = dst.data, t = dst.dtype, n = dst.numel(), value] {
        if (value == 0.0f) return void(std::memset(d, 0, n * dtype_size(t))); // +0 in every dtype
        for (std::size_t i = 0; i < n; ++i) store_from_f32(d, t, i, value);
    });
}

void CpuOps::squared_norm(Stream& s, const std::vector<Tensor>& parts, float* out) {
    s.enqueue([parts, out] {
        cpu::SquaredNorm norm; // a fixed order over the parts' concatenation: see squared_norm.h
        for (const Tensor& p : parts)
            for_dtype(p.dtype, [&](auto tag) {
                using T = decltype(tag);
                norm.add(p.as<const T>(), p.numel());
            });
        *out = float(norm.total());
    });
}

void CpuOps::fixed_accumulate(Stream& s, const Tensor& acc, const Tensor& src, int exponent,
                              float* amax) {
    for_dtype(src.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([a = acc.as<std::int64_t>(), x = src.as<const T>(), n = src.numel(), exponent,
                   amax] { *amax = std::max(*amax, cpu::fixed_accumulate(a, x, n, exponent)); });
    });
}

void CpuOps::fixed_to_float(Stream& s, const Tensor& dst, const Tensor& acc, int exponent,
                            double divisor) {
    for_dtype(dst.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([d = dst.as<T>(), a = acc.as<const std::int64_t>(), n = dst.numel(), exponent,
                   divisor] { cpu::fixed_to_float(d, a, n, exponent, divisor); });
    });
}

void CpuOps::fixed_squares(Stream& s, const Tensor& src, int exponent, std::int64_t* out) {
    for_dtype(src.dtype, [&](auto tag) {
        using T = decltype(tag);
        s.enqueue([x = src.as<const T>(), n = src.numel(), exponent, out] {
            *out += cpu::fixed_squares(x, n, exponent);
        });
    });
}

void CpuOps::adamw(Stream& s, const std::vector<AdamWTensor>& tensors) {
    std::vector<cpu::AdamWSegment> segments;
    for (const AdamWTensor& x : tensors)
        segments.push_back({x.master.as<float>(), x.m.as<float>(), x.v.as<float>(), x.grad.data,
                            x.grad.dtype, x.params.data, x.params.dtype, x.master.numel(), x.k});
    s.enqueue([segments = std::move(segments)] { cpu::adamw(segments); });
}

} // namespace shardlab
