// Llama as Ops: the data flow of one step, unit by unit — acquire -> compute -> release.
#include "model/llama/llama_model.h"

#include "core/error.h"
#include "core/tracer.h"

#include <fmt/format.h>

#include <memory>

namespace shardlab {

// Named, not anonymous: families share unity batches, and a family copied to start another
// keeps these names (model/family_list.h).
namespace llama {
Rope rope_of(const ModelConfig& c) {
    return {float(c.rope_theta), float(c.rope_factor), float(c.rope_low_freq),
            float(c.rope_high_freq), c.rope_original_context};
}
} // namespace llama

LlamaModel::LlamaModel(const ModelConfig& config, int batch, int seq, CheckpointPolicy checkpoint,
                       DType dtype, DeviceContext& context, Ops& ops)
    : ModelBase(config, batch, seq, dtype, context), c_(config), layout_(config),
      off_(llama_block_offsets(config)), checkpoint_(checkpoint), ops_(ops),
      io_(context, batch, seq, config.vocab) {
    c_.validate(); // flash attention only: make_model refuses materialize (require_attention)
}

// --- tensors ----------------------------------------------------------------------------------

Tensor LlamaModel::head_weight(const void* emb, const void* fin) const {
    const int Vp = c_.padded_vocab(), d = c_.hidden;
    return c_.tied_head ? weight(emb, 0, {Vp, d}) : weight(fin, llama_head_offset(c_), {Vp, d});
}

LlamaModel::LayerActs LlamaModel::layer_activations() {
    const std::size_t BT = std::size_t(B_) * T_, d = c_.hidden, f = c_.ffn();
    LayerActs a;
    a.n1 = activation(BT * d, dt_);
    a.r1 = activation(BT, DType::f32);
    a.qkv = activation(BT * std::size_t(qkv_width()), dt_);
    a.lse = activation(std::size_t(B_) * c_.heads * T_, DType::f32);
    a.atty = activation(BT * d, dt_);
    a.h = activation(BT * d, dt_);
    a.n2 = activation(BT * d, dt_);
    a.r2 = activation(BT, DType::f32);
    a.gate = activation(BT * f, dt_);
    a.up = activation(BT * f, dt_);
    a.act = activation(BT * f, dt_);
    return a;
}

// --- one decoder layer ------------------------------------------------------------------------

// x [BT, d] -> out [BT, d]. Weights are nn.Linear's [out, in]: y = a @ W^T.
void LlamaModel::layer_forward(const void* w, const Tensor& x, const Tensor& out, LayerActs& a) {
    const int BT = B_ * T_, d = c_.hidden, f = c_.ffn(), q = qkv_width(), hd = c_.head_dim();
    Stream& s = ctx_.compute();
    const Tensor n1 = tensor(a.n1, {BT, d}), qkv = tensor(a.qkv, {BT, q}),
                 atty = tensor(a.atty, {BT, d}), h = tensor(a.h, {BT, d}),
                 n2 = tensor(a.n2, {BT, d}), gate = tensor(a.gate, {BT, f}),
                 up = tensor(a.up, {BT, f}), act = tensor(a.act, {BT, f});
    ops_.rmsnorm_forward(s, n1, row_stats(a.r1), x, weight(w, off_.in_norm, {d}),
                         float(c_.norm_eps));
    ops_.gemm(s, n1, false, weight(w, off_.qkv, {q, d}), true, qkv, 1.0f, 0.0f);
    ops_.rope_forward(s, qkv, T_, c_.heads + c_.kv_heads, hd, llama::rope_of(c_)); // q and k
    ops_.flash_attention_forward(s, atty.view(0, {B_, T_, d}), tensor(a.lse, {B_, c_.heads, T_}),
                                 qkv.view(0, {B_, T_, q}), c_.heads, c_.kv_heads);
    ops_.gemm(s, atty, false, weight(w, off_.o, {d, d}), true, h, 1.0f, 0.0f);
    ops_.accumulate(s, h, x); // residual
    ops_.rmsnorm_forward(s, n2, row_stats(a.r2), h, weight(w, off_.post_norm, {d}),
                         float(c_.norm_eps));
    ops_.gemm(s, n2, false, weight(w, off_.gate, {f, d}), true, gate, 1.0f, 0.0f);
    ops_.gemm(s, n2, false, weight(w, off_.up, {f, d}), true, up, 1.0f, 0.0f);
    ops_.swiglu_forward(s, act, gate, up);
    ops_.gemm(s, act, false, weight(w, off_.down, {d, f}), true, out, 1.0f, 0.0f);
    ops_.accumulate(s, out, h); // residual
}

// On entry g.dx holds d(loss)/d(out); on exit d(loss)/d(x). Weight gradients accumulate into dw:
// for y = a @ W^T, da = dy @ W and dW += dy^T @ a.
void LlamaModel::layer_backward(const void* w, void* dw, const Tensor& x, LayerActs& a, Grads& g) {
    const int BT = B_ * T_, d = c_.hidden, f = c_.ffn(), q = qkv_width(), hd = c_.head_dim();
    Stream& s = ctx_.compute();
    const Tensor dx = tensor(g.dx, {BT, d}), dsmall = tensor(g.dsmall, {BT, d}),
                 dqkv = tensor(g.dqkv, {BT, q}), dact = tensor(g.dact, {BT, f}),
                 dgate = tensor(g.dgate, {BT, f}), dup = tensor(g.dup, {BT, f});
    const Tensor n1 = tensor(a.n1, {BT, d}), qkv = tensor(a.qkv, {BT, q}),
                 atty = tensor(a.atty, {BT, d}), h = tensor(a.h, {BT, d}),
                 n2 = tensor(a.n2, {BT, d}), gate = tensor(a.gate, {BT, f}),
                 up = tensor(a.up, {BT, f}), act = tensor(a.act, {BT, f});
    // The MLP: down, the gate, then gate and up back to n2, then the post-attention norm (its
    // input gradient adds to dx, which already carries the residual's).
    ops_.gemm(s, dx, false, weight(w, off_.down, {d, f}), false, dact, 1.0f, 0.0f);
    ops_.gemm(s, dx, true, act, false, weight(dw, off_.down, {d, f}), 1.0f, 1.0f);
    ops_.swiglu_backward(s, dgate, dup, dact, gate, up);
    ops_.gemm(s, dgate, false, weight(w, off_.gate, {f, d}), false, dsmall, 1.0f, 0.0f);
    ops_.gemm(s, dup, false, weight(w, off_.up, {f, d}), false, dsmall, 1.0f, 1.0f);
    ops_.gemm(s, dgate, true, n2, false, weight(dw, off_.gate, {f, d}), 1.0f, 1.0f);
    ops_.gemm(s, dup, true, n2, false, weight(dw, off_.up, {f, d}), 1.0f, 1.0f);
    ops_.rmsnorm_backward(s, dx, weight(dw, off_.post_norm, {d}), dsmall, h,
                          weight(w, off_.post_norm, {d}), row_stats(a.r2)); // dx: d(h)
    // Attention: o_proj, flash backward (probabilities recomputed from qkv and lse), RoPE's
    // inverse rotation on dq and dk, the qkv projection, the input norm.
    ops_.gemm(s, dx, false, weight(w, off_.o, {d, d}), false, dsmall, 1.0f, 0.0f);
    ops_.gemm(s, dx, true, atty, false, weight(dw, off_.o, {d, d}), 1.0f, 1.0f);
    ops_.flash_attention_backward(s, dqkv.view(0, {B_, T_, q}), dsmall.view(0, {B_, T_, d}),
                                  qkv.view(0, {B_, T_, q}), atty.view(0, {B_, T_, d}),
                                  tensor(a.lse, {B_, c_.heads, T_}), c_.heads, c_.kv_heads);
    ops_.rope_backward(s, dqkv, T_, c_.heads + c_.kv_heads, hd, llama::rope_of(c_));
    ops_.gemm(s, dqkv, false, weight(w, off_.qkv, {q, d}), false, dsmall, 1.0f, 0.0f);
    ops_.gemm(s, dqkv, true, n1, false, weight(dw, off_.qkv, {q, d}), 1.0f, 1.0f);
    ops_.rmsnorm_backward(s, dx, weight(dw, off_.in_norm, {d}), dsmall, x,
                          weight(w, off_.in_norm, {d}), row_stats(a.r1)); // dx: d(x)
}

// --- forward and backward ---------------------------------------------------------------------

void LlamaModel::forward(UnitParams& params, const std::uint16_t* inputs,
                         const std::uint16_t* targets, float grad_scale) {
    const int L = c_.layers, d = c_.hidden, V = c_.vocab, Vp = c_.padded_vocab(), BT = B_ * T_;
    const bool training = grad_scale != 0.0f;
    Stream& s = ctx_.compute();
    io_.upload_tokens(inputs, targets);
    double* loss = io_.next_loss();
    logits_.release(); // a previous forward's logits (kept for logits()) must not add to this peak
    x_.clear();
    acts_.clear();
    acts_.resize(std::size_t(L));
    for (int l = 0; l <= L; ++l) x_.push_back(activation(std::size_t(BT) * d, dt_));
    auto x = [&](int l) { return tensor(x_[std::size_t(l)], {BT, d}); };

    const void* emb = params.acquire(ParamLayout::kEmbeddings);
    {
        const TraceScope span(ctx_.tracer(), s, "embedding forward", "model");
        ops_.embedding_forward(s, tensor(x_[0], {B_, T_, d}), io_.inputs(), weight(emb, 0, {Vp, d}),
                               Tensor{}); // no position table: RoPE carries positions
    }
    params.release(ParamLayout::kEmbeddings);

    for (int l = 0; l < L; ++l) {
        const void* w = params.acquire(layout_.block_unit(l));
        acts_[std::size_t(l)] = layer_activations();
        {
            const TraceScope span(ctx_.tracer(), s, fmt::format("block {} forward", l), "model");
            layer_forward(w, x(l), x(l + 1), acts_[std::size_t(l)]);
        }
        if (checkpoint_.checkpointed(l)) acts_[std::size_t(l)] = LayerActs{}; // input kept only
        params.release(layout_.block_unit(l));
    }

    // The final norm, then the head: logits = norm(x) @ W^T, W = lm_head or embed_tokens.
    const void* fin = head_fin_ = params.acquire(layout_.final_unit());
    emb = head_emb_ = c_.tied_head ? params.acquire(ParamLayout::kEmbeddings) : nullptr;
    const TraceScope head_span(ctx_.tracer(), s, "head forward", "model");
    nf_ = activation(std::size_t(BT) * d, dt_);
    rf_ = activation(std::size_t(BT), DType::f32);
    logits_ = activation(std::size_t(BT) * Vp, dt_);
    const Tensor nf = tensor(nf_, {BT, d}), logits = tensor(logits_, {BT, Vp});
    ops_.rmsnorm_forward(s, nf, row_stats(rf_), x(L), weight(fin, 0, {d}), float(c_.norm_eps));
    ops_.gemm(s, nf, false, head_weight(emb, fin), true, logits, 1.0f, 0.0f);
    ops_.cross_entropy(s, logits, V, io_.targets(), training ? grad_scale / float(BT) : 0.0f, loss);
    if (training) return;
    params.release(layout_.final_unit());
    if (c_.tied_head) params.release(ParamLayout::kEmbeddings);
    x_.clear();
    acts_.clear();
    nf_.release();
    rf_.release();
    io_.release_tokens(); // logits_ stay for logits()
}

void LlamaModel::backward(UnitParams& params) {
    // dlogits' padded columns are zero (cross_entropy): no gradient reaches the padded rows.
    const int L = c_.layers, d = c_.hidden, f = c_.ffn(), Vp = c_.padded_vocab(), BT = B_ * T_;
    const std::size_t n = std::size_t(BT) * d, es = dtype_size(dt_);
    const std::size_t nf = std::size_t(BT) * f, nq = std::size_t(BT) * qkv_width();
    check(!x_.empty(), "internal: backward without a training forward");
    Stream& s = ctx_.compute();
    MemoryTracker& tracker = ctx_.tracker();
    auto scratch = [&](std::size_t elements) {
        return tracker.allocate(elements * es, Category::workspace, s);
    };
    Grads g{scratch(n), scratch(n), scratch(nq), scratch(nf), scratch(nf), scratch(nf)};
    const Tensor dx = tensor(g.dx, {BT, d}), dsmall = tensor(g.dsmall, {BT, d});
    ops_.fill(s, dx, 0.0f);

    // The head and the final norm (their units are still acquired from the forward).
    // The embeddings' gradient is asked for where it is first written — the head's backward when
    // tied, the embedding's backward at the end otherwise — so under ZeRO-2/3 its full buffer is
    // not held through every layer's backward (the plan's schedule: optim/gather_schedule.h).
    void* dfin = params.grads(layout_.final_unit());
    void* demb = c_.tied_head ? params.grads(ParamLayout::kEmbeddings) : nullptr;
    const Tensor dlogits = tensor(logits_, {BT, Vp}), nf_t = tensor(nf_, {BT, d});
    const Tensor dhead =
        c_.tied_head ? weight(demb, 0, {Vp, d}) : weight(dfin, llama_head_offset(c_), {Vp, d});
    auto head_span = std::make_unique<TraceScope>(ctx_.tracer(), s, "head backward", "model");
    ops_.gemm(s, dlogits, false, head_weight(head_emb_, head_fin_), false, dsmall, 1.0f, 0.0f);
    ops_.gemm(s, dlogits, true, nf_t, false, dhead, 1.0f, 1.0f);
    ops_.rmsnorm_backward(s, dx, weight(dfin, 0, {d}), dsmall, tensor(x_[std::size_t(L)], {BT, d}),
                          weight(head_fin_, 0, {d}), row_stats(rf_));
    head_span.reset();
    logits_.release();
    nf_.release();
    rf_.release();
    x_[std::size_t(L)].release();
    params.release(layout_.final_unit());
    if (c_.tied_head) params.release(ParamLayout::kEmbeddings);
    params.grads_done(layout_.final_unit());

    for (int l = L - 1; l >= 0; --l) {
        const int unit = layout_.block_unit(l);
        const void* w = params.acquire(unit);
        const Tensor x = tensor(x_[std::size_t(l)], {BT, d});
        LayerActs& a = acts_[std::size_t(l)];
        const TraceScope span(ctx_.tracer(), s, fmt::format("block {} backward", l), "model");
        if (checkpoint_.checkpointed(l)) { // recompute; the output goes to scratch
            a = layer_activations();
            const TraceScope recompute(ctx_.tracer(), s, fmt::format("block {} recompute", l),
                                       "model");
            layer_forward(w, x, dsmall, a);
        }
        layer_backward(w, params.grads(unit), x, a, g);
        a = LayerActs{};
        x_[std::size_t(l)].release();
        params.release(unit);
        params.grads_done(unit);
    }
    const TraceScope embedding_span(ctx_.tracer(), s, "embedding backward", "model");
    if (!demb) demb = params.grads(ParamLayout::kEmbeddings);
    ops_.embedding_backward(s, weight(demb, 0, {Vp, d}), Tensor{}, tensor(g.dx, {B_, T_, d}),
                            io_.inputs());
    params.grads_done(ParamLayout::kEmbeddings);
    x_.clear();
    acts_.clear();
    io_.release_tokens();
}

std::vector<float> LlamaModel::logits() {
    check(logits_.data() != nullptr, "internal: no logits kept (run an evaluation forward)");
    return io_.unpadded_logits(tensor(logits_, {B_ * T_, c_.padded_vocab()}));
}

} // namespace shardlab
