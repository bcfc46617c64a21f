// GPTModel<T>: GPT-2 forward and backward on the CPU for one micro-batch of B sequences of T
// tokens, in storage type T (float, bf16_t, f16_t). It walks the sharding units in order —
// acquire, compute, release — so the same code runs resident or under ZeRO. Activations are
// allocated per step under `activations` and freed as backward consumes them; a checkpointed
// block keeps only its input and recomputes the rest in backward, with bitwise-identical results.
#pragma once

#include "core/memory_tracker.h"
#include "core/scratch_buffer.h"
#include "model/gpt_config.h"
#include "model/kernels/cpu/numeric.h"
#include "model/param_layout.h"
#include "model/unit_params.h"

#include <cstdint>
#include <vector>

namespace shardlab {

// Which blocks keep only their input: none (every = 0), all (1), or blocks 0, K, 2K, ... (K).
struct CheckpointPolicy {
    int every = 0;
    bool checkpointed(int layer) const { return every > 0 && layer % every == 0; }
};
CheckpointPolicy parse_checkpoint(const std::string& text); // "none" | "all" | "every:K"

template <typename T>
class GPTModel {
  public:
    GPTModel(const GPTConfig& config, int batch, int seq, CheckpointPolicy checkpoint,
             MemoryTracker& tracker);

    // Mean cross-entropy over B*T positions; keeps the logits (see logits()).
    double forward(UnitParams& params, const std::uint16_t* inputs, const std::uint16_t* targets);
    // Forward, then backward accumulating d(loss * grad_scale) into params.grads(); returns the
    // mean loss. grad_scale carries loss scaling and 1/grad_accum.
    double forward_backward(UnitParams& params, const std::uint16_t* inputs,
                            const std::uint16_t* targets, float grad_scale);
    const T* logits() const; // [B, T, V] after forward()

    const ParamLayout& layout() const { return layout_; }
    int batch() const { return B_; }
    int seq() const { return T_; }

  private:
    // What one block keeps for its backward (T-typed tensors, and LayerNorm statistics in the
    // compute type). Sizes: ln1, atty, res2, ln2: [BT, d]; qkv: [BT, 3d]; att: [B, H, T, T];
    // fch, fch_gelu: [BT, 4d]; means and rstds: [BT].
    struct BlockActs {
        Allocation ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2, ln2_mean, ln2_rstd, fch,
            fch_gelu;
    };
    // Backward workspace: the residual stream's gradient and per-layer scratch gradients.
    struct Grads {
        Allocation dx, dsmall, dqkv, dbig;
    };
    void block_forward(int layer, const T* w, const T* x, T* out, BlockActs& a);
    void block_backward(int layer, const T* w, T* dw, const T* x, BlockActs& a, Grads& g);
    BlockActs allocate_block_acts();
    double forward_impl(UnitParams& params, const std::uint16_t* inputs,
                        const std::uint16_t* targets, float dlogits_scale);
    void backward_impl(UnitParams& params, const std::uint16_t* inputs);

    GPTConfig c_;
    ParamLayout layout_;
    int B_, T_;
    CheckpointPolicy checkpoint_;
    MemoryTracker& tracker_;
    ScratchBuffer workspace_;

    // Live between forward and backward.
    std::vector<Allocation> x_;   // x_[l]: input of block l; x_[L]: input of ln_f
    std::vector<BlockActs> acts_; // per block; empty while checkpointed
    Allocation lnf_, lnf_mean_, lnf_rstd_, logits_;
    // The embeddings (tied head) and final units stay acquired from the head's forward through
    // its backward, so ZeRO-3 gathers them once for both.
    const T* head_emb_ = nullptr;
    const T* head_fin_ = nullptr;
};

} // namespace shardlab
