// LlamaModel: a Llama-family decoder (Hugging Face LlamaForCausalLM's arithmetic) for one
// micro-batch of B sequences of T tokens, as Ops on the compute stream, walking the sharding
// units acquire -> compute -> release as GPTModel does. A decoder layer:
//   h = x + o_proj(attention(rope(q), rope(k), v)),  [q | k | v] = rmsnorm(x) @ Wqkv^T
//   out = h + down_proj(silu(gate_proj(n)) * up_proj(n)),  n = rmsnorm(h)
// with grouped-query attention (kv_heads dividing heads) in the flash form, no biases, and the
// head tied to embed_tokens or its own lm_head. Checkpointed layers keep only their input.
#pragma once

#include "model/checkpoint_policy.h"
#include "model/llama/llama_layout.h"
#include "model/model_base.h"
#include "model/ops.h"
#include "model/step_io.h"

#include <vector>

namespace shardlab {

class LlamaModel final : public ModelBase {
  public:
    LlamaModel(const ModelConfig& config, int batch, int seq, CheckpointPolicy checkpoint,
               DType dtype, DeviceContext& context, Ops& ops);

    void forward(UnitParams& params, const std::uint16_t* inputs, const std::uint16_t* targets,
                 float grad_scale = 0.0f) override;
    void backward(UnitParams& params) override;
    std::vector<double> take_losses() override { return io_.take_losses(); }
    std::vector<float> logits() override;

    const ParamLayout& layout() const override { return layout_; }
    AttentionKind attention() const override { return AttentionKind::flash; }

  private:
    // What one layer keeps for its backward: n1, n2 [BT, d] and their 1/rms [BT] (fp32); qkv
    // [BT, (H + 2 Hkv) hd] after RoPE; lse [B, H, T] (fp32); atty [BT, H hd]; h [BT, d]; gate, up,
    // act [BT, ffn].
    struct LayerActs {
        Allocation n1, r1, qkv, lse, atty, h, n2, r2, gate, up, act;
    };
    // Backward workspace: the residual stream's gradient, a [BT, d] scratch, dqkv, and three
    // [BT, ffn] scratches (d act, d gate, d up).
    struct Grads {
        Allocation dx, dsmall, dqkv, dact, dgate, dup;
    };
    int qkv_width() const { return (c_.heads + 2 * c_.kv_heads) * c_.head_dim(); }
    LayerActs layer_activations();
    void layer_forward(const void* w, const Tensor& x, const Tensor& out, LayerActs& a);
    void layer_backward(const void* w, void* dw, const Tensor& x, LayerActs& a, Grads& g);
    // The head's weight [Vp, d]: lm_head in the final unit, or embed_tokens when tied.
    Tensor head_weight(const void* emb, const void* fin) const;

    ModelConfig c_;
    ParamLayout layout_;
    LlamaBlockOffsets off_;
    CheckpointPolicy checkpoint_;
    Ops& ops_;
    StepIO io_;

    // Live between forward and backward.
    std::vector<Allocation> x_;   // x_[l]: input of layer l; x_[L]: input of the final norm
    std::vector<LayerActs> acts_; // per layer; empty while checkpointed
    Allocation nf_, rf_, logits_;
    const void* head_emb_ = nullptr; // acquired from the head's forward through its backward
    const void* head_fin_ = nullptr;
};

} // namespace shardlab
