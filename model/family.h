// Family: every fact shardlab asks of a model family, in one descriptor per family. The engine,
// the plan, the weights readers and writers and the command line reach a family only through its
// descriptor (and its model, model/families.h), so adding one is its folder, its kernels and one
// line in model/family_list.h. The descriptor holds no model code: what reads or writes weights,
// plans, or fuzzes a parser links the facts of every family and no model.
#pragma once

#include "model/architecture.h"
#include "model/attention_kind.h"
#include "model/checkpoint_policy.h"
#include "model/gemm_shape.h"
#include "model/kernel_bytes.h"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace shardlab {

struct ModelConfig;
struct ModelPreset; // model/model_presets.h
struct ParamUnit;

// A module DeepSpeed's ZeRO-3 estimator may find largest (its "largest layer"): Hugging Face's
// name and its parameter count.
struct DeepSpeedModule {
    std::string name;
    std::uint64_t params = 0;
};

struct Family {
    // --- Names
    const char* name;          // --arch and the "arch" of shardlab's JSON config: "gpt2"
    const char* hf_model_type; // a Hugging Face config.json's "model_type"
    const char* small_preset;  // the preset `train/init/eval --arch NAME` alone starts from
    const char* plan_preset;   // the preset `plan --arch NAME` alone starts from
    std::span<const ModelPreset> (*presets)(); // the family's part of the one preset table

    // --- Shape (ModelConfig's family-specific half)
    bool ffn_follows_hidden;      // the MLP is 4 x hidden wide (--hidden resets --ffn)
    bool materializing_attention; // a T x T attention kernel exists (--attention materialize)
    // The exact parameter count with `rows` rows of token embedding (V, or Vp for the stored
    // count); the f64 one cannot overflow, so it sizes up an untrusted config before allocating.
    std::size_t (*params)(const ModelConfig& c, int rows);
    double (*params_f64)(const ModelConfig& c, int rows);
    // The family's own rules, after ModelConfig::validate's shared ones; UsageError names the fix.
    void (*validate)(const ModelConfig& c);
    std::string (*describe)(const ModelConfig& c); // "L=4 d=256 H=4 T=256 V=256"

    // --- Configs on disk
    // shardlab's JSON config (weights metadata, checkpoints): the family's fields beyond the
    // shared ones (model/model_config.h), written and read (a missing one is named).
    void (*to_json)(const ModelConfig& c, nlohmann::json& j);
    void (*from_json)(const nlohmann::json& j, ModelConfig& c);
    // A Hugging Face config.json of this model_type, read into c (not validated) and written.
    void (*from_hf)(const nlohmann::json& j, const std::string& where, ModelConfig& c);
    nlohmann::json (*to_hf)(const ModelConfig& c);

    // --- Parameters
    // The sharding units ParamLayout holds, in order (embeddings, one per block, the final unit).
    std::vector<ParamUnit> (*units)(const ModelConfig& c);
    // A tensor a weights file may hold that is no parameter here (a tied head's copy, buffers).
    bool (*ignored_tensor)(const std::string& name, const ModelConfig& c);
    // A file's tensor name as the layout spells it (GPT-2 files come with or without a prefix).
    std::string (*canonical_name)(const std::string& name);

    // --- Costs (the plan, the time model, calibrate, bench step)
    // Every linear's forward, input-gradient and weight-gradient product for `tokens` rows, in
    // the order a block runs them; the head's names start "head.".
    std::vector<GemmShape> (*gemm_shapes)(const ModelConfig& c, std::int64_t tokens);
    // The memory-bound kernels' bytes for N tokens with activations of es bytes.
    KernelBytes (*kernel_bytes)(const ModelConfig& c, double N, double es);
    // What the model allocates for one micro-batch, exactly (S: the storage dtype's bytes): the
    // activation peak, and backward's gradient scratch.
    std::uint64_t (*activation_bytes)(const ModelConfig& c, int batch, int seq, std::uint64_t S,
                                      CheckpointPolicy checkpoint, AttentionKind attention);
    std::uint64_t (*gradient_scratch_bytes)(const ModelConfig& c, int batch, int seq,
                                            std::uint64_t S);
    // DeepSpeed's candidates for the largest layer, in model.modules() order.
    std::vector<DeepSpeedModule> (*deepspeed_modules)(const ModelConfig& c);
    // The arguments tools/torch_bench_step.py needs beyond the shared shape flags.
    std::vector<std::string> (*peer_args)(const ModelConfig& c);
};

// The descriptor of `a`; throws UsageError for a bare parameter count (plan --params), which has
// no family.
const Family& family(Architecture a);
// Throws UsageError when the family has no kernel for `attention` (a Llama: flash only).
void require_attention(const Family& f, AttentionKind attention);
// Every family, in model/family_list.h's order.
std::vector<const Family*> all_families();
// "gpt2 or llama": the names, for messages that list the choices.
std::string family_names();
// The architecture whose family is named `name` (Family::name), or reads config.json's
// `model_type` (Family::hf_model_type); nullopt when no family does.
std::optional<Architecture> find_architecture(const std::string& name);
std::optional<Architecture> find_hf_architecture(const std::string& model_type);

} // namespace shardlab
