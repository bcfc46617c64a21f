// GPTModel: the GPT-2 family's Model (model/model.h). Forward and backward for one micro-batch of
// B sequences of T tokens, in one storage dtype (fp32, bf16 or fp16), as a sequence of Ops
// enqueued on the compute stream. It walks the sharding units in order — acquire, compute,
// release — so the same code runs resident or under ZeRO, on any backend. Activations are
// requested from the tracker — the residual stream's L+1 tensors when forward starts, each
// block's and the head's as they come — and released as soon as backward has consumed them (the
// caching allocator hands the same memory back step after step); a checkpointed block keeps only
// its input and recomputes the rest in backward, with bitwise-identical results.
#pragma once

#include "core/device_context.h"
#include "core/tensor.h"
#include "model/attention_kind.h"
#include "model/checkpoint_policy.h"
#include "model/gpt2/gpt_layout.h"
#include "model/model_base.h"
#include "model/model_config.h"
#include "model/ops.h"
#include "model/param_layout.h"
#include "model/step_io.h"
#include "model/unit_params.h"

#include <cstdint>
#include <vector>

namespace shardlab {

class GPTModel final : public ModelBase {
  public:
    GPTModel(const ModelConfig& config, int batch, int seq, CheckpointPolicy checkpoint,
             DType dtype, DeviceContext& context, Ops& ops,
             AttentionKind attention = AttentionKind::flash);

    void forward(UnitParams& params, const std::uint16_t* inputs, const std::uint16_t* targets,
                 float grad_scale = 0.0f) override;
    void backward(UnitParams& params) override;
    std::vector<double> take_losses() override { return io_.take_losses(); }
    std::vector<float> logits() override;

    const ParamLayout& layout() const override { return layout_; }
    AttentionKind attention() const override { return attention_; }

  private:
    // What one block keeps for its backward (dtype tensors, and LayerNorm statistics in fp32).
    // Sizes: ln1, atty, res2, ln2: [BT, d]; qkv: [BT, 3d]; att: the materialized probabilities
    // [B, H, T, T] in the model's dtype, or with flash attention the per-row log-sum-exp [B, H, T]
    // in fp32; fch, fch_gelu: [BT, 4d]; means and rstds: [BT].
    struct BlockActs {
        Allocation ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2, ln2_mean, ln2_rstd, fch,
            fch_gelu;
    };
    // Backward workspace: the residual stream's gradient and per-layer scratch gradients.
    struct Grads {
        Allocation dx, dsmall, dqkv, dbig;
    };
    Tensor lse(const Allocation& a) const; // fp32 [B, H, T]
    void linear(const Tensor& out, const Tensor& in, const void* unit, std::size_t w_off,
                std::size_t b_off, int in_features, int out_features);
    void linear_backward(const Tensor& din, void* dunit, const Tensor& dout, const Tensor& in,
                         const void* unit, std::size_t w_off, std::size_t b_off, int in_features,
                         int out_features);
    void linear_param_grads(void* dunit, const Tensor& dout, const Tensor& in, std::size_t w_off,
                            std::size_t b_off, int in_features, int out_features);
    BlockActs block_activations();
    void block_forward(const void* w, const Tensor& x, const Tensor& out, BlockActs& a);
    void block_backward(const void* w, void* dw, const Tensor& x, BlockActs& a, Grads& g);

    ModelConfig c_;
    ParamLayout layout_;
    Gpt2BlockOffsets off_;
    CheckpointPolicy checkpoint_;
    AttentionKind attention_;
    Ops& ops_;
    StepIO io_; // token ids on the device, the losses, the unpadded logits

    // Live between forward and backward.
    std::vector<Allocation> x_;   // x_[l]: input of block l; x_[L]: input of ln_f
    std::vector<BlockActs> acts_; // per block; empty while checkpointed
    Allocation lnf_, lnf_mean_, lnf_rstd_, logits_;
    // The embeddings (tied head) and final units stay acquired from the head's forward through
    // its backward, so ZeRO-3 gathers them once for both.
    const void* head_emb_ = nullptr;
    const void* head_fin_ = nullptr;
};

} // namespace shardlab
