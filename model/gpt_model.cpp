// GPT-2 on the CPU: the data flow of one step, unit by unit — acquire -> compute -> release.
#include "model/gpt_model.h"

#include "core/error.h"
#include "model/kernels/cpu/attention.h"
#include "model/kernels/cpu/cross_entropy.h"
#include "model/kernels/cpu/embedding.h"
#include "model/kernels/cpu/gelu.h"
#include "model/kernels/cpu/gemm.h"
#include "model/kernels/cpu/layernorm.h"
#include "model/kernels/cpu/linear.h"
#include "model/kernels/cpu/residual.h"

#include <cstring>
#include <fmt/format.h>

namespace shardlab {

CheckpointPolicy parse_checkpoint(const std::string& text) {
    if (text == "none") return {0};
    if (text == "all") return {1};
    if (text.rfind("every:", 0) == 0) {
        int k = 0;
        try {
            k = std::stoi(text.substr(6));
        } catch (const std::exception&) {
        }
        if (k >= 1) return {k};
    }
    throw UsageError("bad --checkpoint '" + text + "'; use none, all or every:K with K >= 1");
}

template <typename T>
GPTModel<T>::GPTModel(const GPTConfig& config, int batch, int seq, CheckpointPolicy checkpoint,
                      MemoryTracker& tracker)
    : c_(config), layout_(config), B_(batch), T_(seq), checkpoint_(checkpoint), tracker_(tracker),
      workspace_(tracker, Category::workspace) {
    c_.validate();
    if (batch <= 0) throw UsageError(fmt::format("micro-batch must be positive, got {}", batch));
    if (seq <= 0 || seq > c_.context)
        throw UsageError(
            fmt::format("sequence length {} is outside 1..{} (the position table); use "
                        "--seq <= {} or a model with a longer context",
                        seq, c_.context, c_.context));
}

namespace {
template <typename U>
Allocation act(MemoryTracker& t, std::size_t n) {
    return t.allocate(n * sizeof(U), Category::activations);
}
template <typename U>
U* ptr(const Allocation& a) {
    return a.as<U>();
}
} // namespace

template <typename T>
typename GPTModel<T>::BlockActs GPTModel<T>::allocate_block_acts() {
    using A = acc_t<T>;
    const std::size_t BT = std::size_t(B_) * T_, d = c_.hidden;
    BlockActs a;
    a.ln1 = act<T>(tracker_, BT * d);
    a.ln1_mean = act<A>(tracker_, BT);
    a.ln1_rstd = act<A>(tracker_, BT);
    a.qkv = act<T>(tracker_, BT * 3 * d);
    a.att = act<T>(tracker_, std::size_t(B_) * c_.heads * T_ * T_);
    a.atty = act<T>(tracker_, BT * d);
    a.res2 = act<T>(tracker_, BT * d);
    a.ln2 = act<T>(tracker_, BT * d);
    a.ln2_mean = act<A>(tracker_, BT);
    a.ln2_rstd = act<A>(tracker_, BT);
    a.fch = act<T>(tracker_, BT * 4 * d);
    a.fch_gelu = act<T>(tracker_, BT * 4 * d);
    return a;
}

// x [BT, d] -> out [BT, d]: out = res2 + mlp(ln2(res2)), res2 = x + attn(ln1(x)).
template <typename T>
void GPTModel<T>::block_forward(int, const T* w, const T* x, T* out, BlockActs& a) {
    using A = acc_t<T>;
    const BlockOffsets& o = layout_.block();
    const int BT = B_ * T_, d = c_.hidden;
    const std::size_t n = std::size_t(BT) * d;
    cpu::layernorm_forward(ptr<T>(a.ln1), ptr<A>(a.ln1_mean), ptr<A>(a.ln1_rstd), x, w + o.ln1_w,
                           w + o.ln1_b, BT, d);
    cpu::linear_forward(ptr<T>(a.qkv), ptr<T>(a.ln1), w + o.attn_w, w + o.attn_b, BT, d, 3 * d,
                        workspace_);
    cpu::attention_forward(ptr<T>(a.atty), ptr<T>(a.att), ptr<T>(a.qkv), B_, T_, d, c_.heads);
    cpu::linear_forward(ptr<T>(a.res2), ptr<T>(a.atty), w + o.proj_w, w + o.proj_b, BT, d, d,
                        workspace_);
    cpu::accumulate(ptr<T>(a.res2), x, n); // residual
    cpu::layernorm_forward(ptr<T>(a.ln2), ptr<A>(a.ln2_mean), ptr<A>(a.ln2_rstd), ptr<T>(a.res2),
                           w + o.ln2_w, w + o.ln2_b, BT, d);
    cpu::linear_forward(ptr<T>(a.fch), ptr<T>(a.ln2), w + o.fc_w, w + o.fc_b, BT, d, 4 * d,
                        workspace_);
    cpu::gelu_forward(ptr<T>(a.fch_gelu), ptr<T>(a.fch), n * 4);
    cpu::linear_forward(out, ptr<T>(a.fch_gelu), w + o.mproj_w, w + o.mproj_b, BT, 4 * d, d,
                        workspace_);
    cpu::accumulate(out, ptr<T>(a.res2), n); // residual
}

// On entry g.dx holds d(loss)/d(out); on exit d(loss)/d(x). Weight gradients accumulate into dw.
template <typename T>
void GPTModel<T>::block_backward(int, const T* w, T* dw, const T* x, BlockActs& a, Grads& g) {
    using A = acc_t<T>;
    const BlockOffsets& o = layout_.block();
    const int BT = B_ * T_, d = c_.hidden;
    T* dx = ptr<T>(g.dx);
    T* dsmall = ptr<T>(g.dsmall);
    T* dbig = ptr<T>(g.dbig);
    T* dqkv = ptr<T>(g.dqkv);
    cpu::linear_backward(dbig, dw + o.mproj_w, dw + o.mproj_b, dx, ptr<T>(a.fch_gelu),
                         w + o.mproj_w, BT, 4 * d, d, workspace_);
    cpu::gelu_backward(dbig, ptr<T>(a.fch), dbig, std::size_t(BT) * 4 * d);
    cpu::linear_backward(dsmall, dw + o.fc_w, dw + o.fc_b, dbig, ptr<T>(a.ln2), w + o.fc_w, BT, d,
                         4 * d, workspace_);
    cpu::layernorm_backward(dx, dw + o.ln2_w, dw + o.ln2_b, dsmall, ptr<T>(a.res2), w + o.ln2_w,
                            ptr<A>(a.ln2_mean), ptr<A>(a.ln2_rstd), BT, d); // dx: d(res2)
    cpu::linear_backward(dsmall, dw + o.proj_w, dw + o.proj_b, dx, ptr<T>(a.atty), w + o.proj_w, BT,
                         d, d, workspace_);
    cpu::attention_backward(dqkv, dsmall, ptr<T>(a.qkv), ptr<T>(a.att), B_, T_, d, c_.heads);
    cpu::linear_backward(dsmall, dw + o.attn_w, dw + o.attn_b, dqkv, ptr<T>(a.ln1), w + o.attn_w,
                         BT, d, 3 * d, workspace_);
    cpu::layernorm_backward(dx, dw + o.ln1_w, dw + o.ln1_b, dsmall, x, w + o.ln1_w,
                            ptr<A>(a.ln1_mean), ptr<A>(a.ln1_rstd), BT, d); // dx: d(x)
}

template <typename T>
double GPTModel<T>::forward_impl(UnitParams& params, const std::uint16_t* inputs,
                                 const std::uint16_t* targets, float dlogits_scale) {
    using A = acc_t<T>;
    const int L = c_.layers, d = c_.hidden, V = c_.vocab, BT = B_ * T_;
    for (int i = 0; i < BT; ++i)
        if (inputs[i] >= V || targets[i] >= V)
            throw Error(fmt::format(
                "token id {} at position {} is not below the vocabulary size {}; "
                "use a model with --vocab > {} or data of this vocabulary",
                std::max(inputs[i], targets[i]), i, V, std::max(inputs[i], targets[i])));
    logits_.release(); // a previous forward's logits (kept for logits()) must not add to this peak
    x_.clear();
    acts_.clear();
    acts_.resize(L);
    for (int l = 0; l <= L; ++l) x_.push_back(act<T>(tracker_, std::size_t(BT) * d));

    const T* emb = static_cast<const T*>(params.acquire(ParamLayout::kEmbeddings));
    cpu::embedding_forward(ptr<T>(x_[0]), inputs, emb, emb + layout_.wpe_offset(), B_, T_, d);
    params.release(ParamLayout::kEmbeddings);

    for (int l = 0; l < L; ++l) {
        const T* w = static_cast<const T*>(params.acquire(layout_.block_unit(l)));
        acts_[l] = allocate_block_acts();
        block_forward(l, w, ptr<T>(x_[l]), ptr<T>(x_[l + 1]), acts_[l]);
        if (checkpoint_.checkpointed(l)) acts_[l] = BlockActs{}; // keep only the input x_[l]
        params.release(layout_.block_unit(l));
    }

    // ln_f, then the head tied to wte: logits = ln_f(x) @ wte^T.
    const T* fin = head_fin_ = static_cast<const T*>(params.acquire(layout_.final_unit()));
    emb = head_emb_ = static_cast<const T*>(params.acquire(ParamLayout::kEmbeddings));
    lnf_ = act<T>(tracker_, std::size_t(BT) * d);
    lnf_mean_ = act<A>(tracker_, BT);
    lnf_rstd_ = act<A>(tracker_, BT);
    logits_ = act<T>(tracker_, std::size_t(BT) * V);
    cpu::layernorm_forward(ptr<T>(lnf_), ptr<A>(lnf_mean_), ptr<A>(lnf_rstd_), ptr<T>(x_[L]), fin,
                           fin + d, BT, d);
    cpu::gemm<T>(false, true, BT, V, d, 1.0f, ptr<T>(lnf_), d, emb, d, 0.0f, ptr<T>(logits_), V,
                 workspace_);
    return cpu::softmax_cross_entropy(ptr<T>(logits_), targets, BT, V, dlogits_scale);
}

template <typename T>
void GPTModel<T>::backward_impl(UnitParams& params, const std::uint16_t* inputs) {
    using A = acc_t<T>;
    const int L = c_.layers, d = c_.hidden, V = c_.vocab, BT = B_ * T_;
    const std::size_t n = std::size_t(BT) * d;
    Grads g{tracker_.allocate(n * sizeof(T), Category::workspace),
            tracker_.allocate(n * sizeof(T), Category::workspace),
            tracker_.allocate(3 * n * sizeof(T), Category::workspace),
            tracker_.allocate(4 * n * sizeof(T), Category::workspace)};
    std::memset(g.dx.data(), 0, g.dx.bytes());

    // Head and ln_f (the embeddings and final unit are still acquired from the forward).
    const T* emb = head_emb_;
    const T* fin = head_fin_;
    T* demb = static_cast<T*>(params.grads(ParamLayout::kEmbeddings));
    T* dfin = static_cast<T*>(params.grads(layout_.final_unit()));
    T* dsmall = ptr<T>(g.dsmall);
    cpu::gemm<T>(false, false, BT, d, V, 1.0f, ptr<T>(logits_), V, emb, d, 0.0f, dsmall, d,
                 workspace_);
    cpu::gemm<T>(true, false, V, d, BT, 1.0f, ptr<T>(logits_), V, ptr<T>(lnf_), d, 1.0f, demb, d,
                 workspace_);
    cpu::layernorm_backward(ptr<T>(g.dx), dfin, dfin + d, dsmall, ptr<T>(x_[L]), fin,
                            ptr<A>(lnf_mean_), ptr<A>(lnf_rstd_), BT, d);
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
        const T* w = static_cast<const T*>(params.acquire(unit));
        if (checkpoint_.checkpointed(l)) { // recompute; the output goes to scratch, not x_[l+1]
            acts_[l] = allocate_block_acts();
            block_forward(l, w, ptr<T>(x_[l]), dsmall, acts_[l]);
        }
        block_backward(l, w, static_cast<T*>(params.grads(unit)), ptr<T>(x_[l]), acts_[l], g);
        acts_[l] = BlockActs{};
        x_[l].release();
        params.release(unit);
        params.grads_done(unit);
    }
    cpu::embedding_backward(demb, demb + layout_.wpe_offset(), ptr<T>(g.dx), inputs, B_, T_, d, V);
    params.grads_done(ParamLayout::kEmbeddings);
}

template <typename T>
double GPTModel<T>::forward(UnitParams& params, const std::uint16_t* inputs,
                            const std::uint16_t* targets) {
    const double loss = forward_impl(params, inputs, targets, 0.0f);
    params.release(layout_.final_unit());
    params.release(ParamLayout::kEmbeddings);
    x_.clear();
    acts_.clear();
    lnf_.release();
    lnf_mean_.release();
    lnf_rstd_.release();
    return loss; // logits_ stay for logits()
}

template <typename T>
double GPTModel<T>::forward_backward(UnitParams& params, const std::uint16_t* inputs,
                                     const std::uint16_t* targets, float grad_scale) {
    const double loss = forward_impl(params, inputs, targets, grad_scale / float(B_ * T_));
    backward_impl(params, inputs);
    return loss;
}

template <typename T>
const T* GPTModel<T>::logits() const {
    return logits_.as<const T>();
}

template class GPTModel<float>;
template class GPTModel<bf16_t>;
template class GPTModel<f16_t>;

} // namespace shardlab
