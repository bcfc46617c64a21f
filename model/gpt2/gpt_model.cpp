// GPT-2 as Ops: the data flow of one step, unit by unit — acquire -> compute -> release.
#include "model/gpt2/gpt_model.h"

#include "core/error.h"
#include "core/tracer.h"

#include <fmt/format.h>

#include <memory>

namespace shardlab {

GPTModel::GPTModel(const ModelConfig& config, int batch, int seq, CheckpointPolicy checkpoint,
                   DType dtype, DeviceContext& context, Ops& ops, AttentionKind attention)
    : ModelBase(config, batch, seq, dtype, context), c_(config), layout_(config),
      off_(gpt2_block_offsets(config)), checkpoint_(checkpoint), attention_(attention), ops_(ops),
      io_(context, batch, seq, config.vocab) {
    c_.validate();
}

// --- tensors ----------------------------------------------------------------------------------

Tensor GPTModel::lse(const Allocation& a) const {
    return {a.data(), DType::f32, {B_, c_.heads, T_}, a.device()};
}

GPTModel::BlockActs GPTModel::block_activations() {
    const std::size_t BT = std::size_t(B_) * T_, d = c_.hidden;
    BlockActs a;
    a.ln1 = activation(BT * d, dt_);
    a.ln1_mean = activation(BT, DType::f32);
    a.ln1_rstd = activation(BT, DType::f32);
    a.qkv = activation(BT * 3 * d, dt_);
    const std::size_t BH = std::size_t(B_) * c_.heads;
    a.att = attention_ == AttentionKind::flash ? activation(BH * T_, DType::f32)
                                               : activation(BH * T_ * T_, dt_);
    a.atty = activation(BT * d, dt_);
    a.res2 = activation(BT * d, dt_);
    a.ln2 = activation(BT * d, dt_);
    a.ln2_mean = activation(BT, DType::f32);
    a.ln2_rstd = activation(BT, DType::f32);
    a.fch = activation(BT * 4 * d, dt_);
    a.fch_gelu = activation(BT * 4 * d, dt_);
    return a;
}

// --- layers -----------------------------------------------------------------------------------

// out [BT, out_features] = in @ W + b (GPT-2's Conv1D: W [in_features, out_features]).
void GPTModel::linear(const Tensor& out, const Tensor& in, const void* unit, std::size_t w_off,
                      std::size_t b_off, int in_features, int out_features) {
    const Tensor b = weight(unit, b_off, {out_features});
    ops_.gemm(ctx_.compute(), in, false, weight(unit, w_off, {in_features, out_features}), false,
              out, 1.0f, 0.0f, &b);
}

// din = dout @ W^T (overwritten); dW += in^T @ dout; db += column sums of dout.
void GPTModel::linear_backward(const Tensor& din, void* dunit, const Tensor& dout, const Tensor& in,
                               const void* unit, std::size_t w_off, std::size_t b_off,
                               int in_features, int out_features) {
    Stream& s = ctx_.compute();
    ops_.gemm(s, dout, false, weight(unit, w_off, {in_features, out_features}), true, din, 1.0f,
              0.0f);
    linear_param_grads(dunit, dout, in, w_off, b_off, in_features, out_features);
}

// dW += in^T @ dout; db += column sums of dout.
void GPTModel::linear_param_grads(void* dunit, const Tensor& dout, const Tensor& in,
                                  std::size_t w_off, std::size_t b_off, int in_features,
                                  int out_features) {
    ops_.linear_param_grads(ctx_.compute(), in, dout,
                            weight(dunit, w_off, {in_features, out_features}),
                            weight(dunit, b_off, {out_features}));
}

// x [BT, d] -> out [BT, d]: out = res2 + mlp(ln2(res2)), res2 = x + attn(ln1(x)).
void GPTModel::block_forward(const void* w, const Tensor& x, const Tensor& out, BlockActs& a) {
    const Gpt2BlockOffsets& o = off_;
    const int BT = B_ * T_, d = c_.hidden;
    Stream& s = ctx_.compute();
    const Tensor ln1 = tensor(a.ln1, {BT, d}), qkv = tensor(a.qkv, {B_, T_, 3 * d}),
                 atty = tensor(a.atty, {BT, d}), res2 = tensor(a.res2, {BT, d}),
                 ln2 = tensor(a.ln2, {BT, d}), fch = tensor(a.fch, {BT, 4 * d}),
                 fch_gelu = tensor(a.fch_gelu, {BT, 4 * d});
    ops_.layernorm_forward(s, ln1, row_stats(a.ln1_mean), row_stats(a.ln1_rstd), x,
                           weight(w, o.ln1_w, {d}), weight(w, o.ln1_b, {d}));
    linear(qkv.view(0, {BT, 3 * d}), ln1, w, o.attn_w, o.attn_b, d, 3 * d);
    if (attention_ == AttentionKind::flash)
        ops_.flash_attention_forward(s, atty.view(0, {B_, T_, d}), lse(a.att), qkv, c_.heads,
                                     c_.heads);
    else
        ops_.attention_forward(s, atty.view(0, {B_, T_, d}), tensor(a.att, {B_, c_.heads, T_, T_}),
                               qkv, c_.heads);
    linear(res2, atty, w, o.proj_w, o.proj_b, d, d);
    ops_.residual_layernorm_forward(s, res2, x, ln2, row_stats(a.ln2_mean), row_stats(a.ln2_rstd),
                                    weight(w, o.ln2_w, {d}), weight(w, o.ln2_b, {d}));
    ops_.linear_gelu_forward(s, ln2, weight(w, o.fc_w, {d, 4 * d}), weight(w, o.fc_b, {4 * d}), fch,
                             fch_gelu);
    linear(out, fch_gelu, w, o.mproj_w, o.mproj_b, 4 * d, d);
    ops_.accumulate(s, out, res2); // residual
}

// On entry g.dx holds d(loss)/d(out); on exit d(loss)/d(x). Weight gradients accumulate into dw.
void GPTModel::block_backward(const void* w, void* dw, const Tensor& x, BlockActs& a, Grads& g) {
    const Gpt2BlockOffsets& o = off_;
    const int BT = B_ * T_, d = c_.hidden;
    Stream& s = ctx_.compute();
    const Tensor dx = tensor(g.dx, {BT, d}), dsmall = tensor(g.dsmall, {BT, d}),
                 dbig = tensor(g.dbig, {BT, 4 * d}), dqkv = tensor(g.dqkv, {BT, 3 * d});
    const Tensor ln1 = tensor(a.ln1, {BT, d}), qkv = tensor(a.qkv, {B_, T_, 3 * d}),
                 atty = tensor(a.atty, {BT, d}), res2 = tensor(a.res2, {BT, d}),
                 ln2 = tensor(a.ln2, {BT, d}), fch = tensor(a.fch, {BT, 4 * d}),
                 fch_gelu = tensor(a.fch_gelu, {BT, 4 * d});
    // Back through the MLP: the output projection's input gradient through the GELU (the fc
    // bias's gradient with it), the projection's parameter gradients, then fc's input and weight
    // gradients.
    ops_.linear_gelu_backward(s, dx, weight(w, o.mproj_w, {4 * d, d}), fch, dbig,
                              weight(dw, o.fc_b, {4 * d}));
    linear_param_grads(dw, dx, fch_gelu, o.mproj_w, o.mproj_b, 4 * d, d);
    ops_.gemm(s, dbig, false, weight(w, o.fc_w, {d, 4 * d}), true, dsmall, 1.0f, 0.0f);
    ops_.gemm(s, ln2, true, dbig, false, weight(dw, o.fc_w, {d, 4 * d}), 1.0f, 1.0f);
    ops_.layernorm_backward(s, dx, weight(dw, o.ln2_w, {d}), weight(dw, o.ln2_b, {d}), dsmall, res2,
                            weight(w, o.ln2_w, {d}), row_stats(a.ln2_mean),
                            row_stats(a.ln2_rstd)); // dx: d(res2)
    linear_backward(dsmall, dw, dx, atty, w, o.proj_w, o.proj_b, d, d);
    // Flash recomputes the probabilities from qkv and lse; out is the stored attention output.
    if (attention_ == AttentionKind::flash)
        ops_.flash_attention_backward(s, dqkv.view(0, {B_, T_, 3 * d}), dsmall.view(0, {B_, T_, d}),
                                      qkv, atty.view(0, {B_, T_, d}), lse(a.att), c_.heads,
                                      c_.heads);
    else
        ops_.attention_backward(s, dqkv.view(0, {B_, T_, 3 * d}), dsmall.view(0, {B_, T_, d}), qkv,
                                tensor(a.att, {B_, c_.heads, T_, T_}), c_.heads);
    linear_backward(dsmall, dw, dqkv, ln1, w, o.attn_w, o.attn_b, d, 3 * d);
    ops_.layernorm_backward(s, dx, weight(dw, o.ln1_w, {d}), weight(dw, o.ln1_b, {d}), dsmall, x,
                            weight(w, o.ln1_w, {d}), row_stats(a.ln1_mean),
                            row_stats(a.ln1_rstd)); // dx: d(x)
}

// --- forward and backward ---------------------------------------------------------------------

void GPTModel::forward(UnitParams& params, const std::uint16_t* inputs,
                       const std::uint16_t* targets, float grad_scale) {
    // wte, the head's GEMMs and the logits are Vp wide (the padded vocabulary); the loss reads V.
    const int L = c_.layers, d = c_.hidden, V = c_.vocab, Vp = c_.padded_vocab(), BT = B_ * T_;
    const bool training = grad_scale != 0.0f;
    Stream& s = ctx_.compute();
    io_.upload_tokens(inputs, targets);
    double* loss = io_.next_loss();
    logits_.release(); // a previous forward's logits (kept for logits()) must not add to this peak
    x_.clear();
    acts_.clear();
    acts_.resize(L);
    for (int l = 0; l <= L; ++l) x_.push_back(activation(std::size_t(BT) * d, dt_));
    auto x = [&](int l) { return tensor(x_[l], {BT, d}); };

    const void* emb = params.acquire(ParamLayout::kEmbeddings);
    {
        const TraceScope span(ctx_.tracer(), s, "embedding forward", "model");
        ops_.embedding_forward(s, tensor(x_[0], {B_, T_, d}), io_.inputs(),
                               weight(emb, layout_.wte_offset(), {Vp, d}),
                               weight(emb, gpt2_wpe_offset(c_), {c_.context, d}));
    }
    params.release(ParamLayout::kEmbeddings);

    for (int l = 0; l < L; ++l) {
        const void* w = params.acquire(layout_.block_unit(l));
        acts_[l] = block_activations();
        {
            const TraceScope span(ctx_.tracer(), s, fmt::format("block {} forward", l), "model");
            block_forward(w, x(l), x(l + 1), acts_[l]);
        }
        if (checkpoint_.checkpointed(l)) acts_[l] = BlockActs{}; // keep only the input x_[l]
        params.release(layout_.block_unit(l));
    }

    // ln_f, then the head tied to wte: logits = ln_f(x) @ wte^T.
    const void* fin = head_fin_ = params.acquire(layout_.final_unit());
    emb = head_emb_ = params.acquire(ParamLayout::kEmbeddings);
    const TraceScope head_span(ctx_.tracer(), s, "head forward", "model");
    lnf_ = activation(std::size_t(BT) * d, dt_);
    lnf_mean_ = activation(BT, DType::f32);
    lnf_rstd_ = activation(BT, DType::f32);
    logits_ = activation(std::size_t(BT) * Vp, dt_);
    const Tensor lnf = tensor(lnf_, {BT, d}), logits = tensor(logits_, {BT, Vp});
    ops_.layernorm_forward(s, lnf, row_stats(lnf_mean_), row_stats(lnf_rstd_), x(L),
                           weight(fin, 0, {d}), weight(fin, d, {d}));
    ops_.gemm(s, lnf, false, weight(emb, layout_.wte_offset(), {Vp, d}), true, logits, 1.0f, 0.0f);
    ops_.cross_entropy(s, logits, V, io_.targets(), training ? grad_scale / float(BT) : 0.0f, loss);
    if (training) return;
    params.release(layout_.final_unit());
    params.release(ParamLayout::kEmbeddings);
    x_.clear();
    acts_.clear();
    lnf_.release();
    lnf_mean_.release();
    lnf_rstd_.release();
    io_.release_tokens(); // logits_ stay for logits()
}

void GPTModel::backward(UnitParams& params) {
    // dlogits' padded columns are zero (cross_entropy): no gradient reaches wte's padded rows.
    const int L = c_.layers, d = c_.hidden, Vp = c_.padded_vocab(), BT = B_ * T_;
    const std::size_t n = std::size_t(BT) * d, es = dtype_size(dt_);
    check(!x_.empty(), "internal: backward without a training forward");
    Stream& s = ctx_.compute();
    MemoryTracker& tracker = ctx_.tracker();
    Grads g{tracker.allocate(n * es, Category::workspace, s),
            tracker.allocate(n * es, Category::workspace, s),
            tracker.allocate(3 * n * es, Category::workspace, s),
            tracker.allocate(4 * n * es, Category::workspace, s)};
    const Tensor dx = tensor(g.dx, {BT, d}), dsmall = tensor(g.dsmall, {BT, d});
    ops_.fill(s, dx, 0.0f);

    // Head and ln_f (the embeddings and final units are still acquired from the forward).
    const void* emb = head_emb_;
    const void* fin = head_fin_;
    void* demb = params.grads(ParamLayout::kEmbeddings);
    void* dfin = params.grads(layout_.final_unit());
    const Tensor dlogits = tensor(logits_, {BT, Vp}), lnf = tensor(lnf_, {BT, d});
    auto head_span = std::make_unique<TraceScope>(ctx_.tracer(), s, "head backward", "model");
    ops_.gemm(s, dlogits, false, weight(emb, layout_.wte_offset(), {Vp, d}), false, dsmall, 1.0f,
              0.0f);
    ops_.gemm(s, dlogits, true, lnf, false, weight(demb, layout_.wte_offset(), {Vp, d}), 1.0f,
              1.0f);
    ops_.layernorm_backward(s, dx, weight(dfin, 0, {d}), weight(dfin, d, {d}), dsmall,
                            tensor(x_[L], {BT, d}), weight(fin, 0, {d}), row_stats(lnf_mean_),
                            row_stats(lnf_rstd_));
    head_span.reset();
    logits_.release();
    lnf_.release();
    lnf_mean_.release();
    lnf_rstd_.release();
    x_[L].release();
    params.release(layout_.final_unit());
    params.release(ParamLayout::kEmbeddings);
    params.grads_done(layout_.final_unit());

    for (int l = L - 1; l >= 0; --l) {
        const int unit = layout_.block_unit(l);
        const void* w = params.acquire(unit);
        const Tensor x = tensor(x_[l], {BT, d});
        const TraceScope span(ctx_.tracer(), s, fmt::format("block {} backward", l), "model");
        if (checkpoint_.checkpointed(l)) { // recompute; the output goes to scratch, not x_[l+1]
            acts_[l] = block_activations();
            const TraceScope recompute(ctx_.tracer(), s, fmt::format("block {} recompute", l),
                                       "model");
            block_forward(w, x, dsmall, acts_[l]);
        }
        block_backward(w, params.grads(unit), x, acts_[l], g);
        acts_[l] = BlockActs{};
        x_[l].release();
        params.release(unit);
        params.grads_done(unit);
    }
    const TraceScope embedding_span(ctx_.tracer(), s, "embedding backward", "model");
    ops_.embedding_backward(s, weight(demb, layout_.wte_offset(), {Vp, d}),
                            weight(demb, gpt2_wpe_offset(c_), {c_.context, d}),
                            tensor(g.dx, {B_, T_, d}), io_.inputs());
    params.grads_done(ParamLayout::kEmbeddings);
    x_.clear();
    acts_.clear();
    io_.release_tokens();
}

std::vector<float> GPTModel::logits() {
    check(logits_.data() != nullptr, "internal: no logits kept (run an evaluation forward)");
    return io_.unpadded_logits(tensor(logits_, {B_ * T_, c_.padded_vocab()}));
}

} // namespace shardlab
