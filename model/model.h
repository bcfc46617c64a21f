// Model: what the rest of shardlab sees of a model family — the narrow surface the session, the
// sampler and the commands call. A family (GPT-2, model/gpt2/gpt_model.h; Llama,
// model/llama/llama_model.h) implements it, through model/model_base.h; model/families.h makes one
// from a config, so nothing outside the registry and the family names a concrete model. The engine
// sees only the units (layout()) and whether the head is tied (the gather schedule's one
// family-specific input, optim/gather_schedule.h).
#pragma once

#include "core/dtype.h"
#include "model/attention_kind.h"
#include "model/param_layout.h"
#include "model/unit_params.h"

#include <cstdint>
#include <vector>

namespace shardlab {

class Model {
  public:
    virtual ~Model() = default;

    // One forward pass over inputs / targets [B, T] (host memory; ids below the vocabulary size).
    // Training (grad_scale != 0): keeps what backward needs and turns the logits into their
    // gradient, d(loss * grad_scale) — grad_scale carries loss scaling and 1/grad_accum.
    // Evaluation (grad_scale == 0): releases every unit and keeps only the logits.
    virtual void forward(UnitParams& params, const std::uint16_t* inputs,
                         const std::uint16_t* targets, float grad_scale = 0.0f) = 0;
    // Backward of the last training forward, accumulating into params.grads().
    virtual void backward(UnitParams& params) = 0;
    // The mean losses of the forwards since the last call, in order; waits for them.
    virtual std::vector<double> take_losses() = 0;
    // The logits [B, T, V] of the last evaluation forward, as fp32; waits for them.
    virtual std::vector<float> logits() = 0;

    // The sharding units, in the order forward acquires them.
    virtual const ParamLayout& layout() const = 0;
    virtual int batch() const = 0;
    virtual int seq() const = 0;
    virtual DType dtype() const = 0;
    virtual AttentionKind attention() const = 0;
    // Whether the output head is the token embedding (its unit is acquired again for the head).
    bool tied_head() const { return layout().tied_head(); }
};

} // namespace shardlab
