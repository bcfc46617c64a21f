// Every registered family's descriptor (model/family.h) against its own layout and its own
// configs: what a new family's line in model/family_list.h gets checked for without a test of its
// own. The counts are computed two ways — the descriptor's formulas and the tensors the layout
// holds — so a family whose facts disagree with its parameters fails here by name.
#include "core/error.h"
#include "model/family.h"
#include "model/hf_checkpoint.h"
#include "model/model_presets.h"
#include "model/param_layout.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

namespace shardlab {
namespace {

// Every preset of every family, stored as a run stores it (vocabulary padded to 128).
std::vector<ModelConfig> every_preset() {
    std::vector<ModelConfig> out;
    for (const Family* f : all_families())
        for (const ModelPreset& p : f->presets()) {
            ModelConfig c = p.config;
            c.vocab_multiple = ModelConfig::kDefaultVocabMultiple;
            out.push_back(c);
        }
    return out;
}

TEST(Families, TheRegistryIsOneTableOfDistinctNames) {
    std::set<std::string> names, hf_types, presets;
    for (const Family* f : all_families()) {
        EXPECT_TRUE(names.insert(f->name).second) << f->name;
        EXPECT_TRUE(hf_types.insert(f->hf_model_type).second) << f->hf_model_type;
        EXPECT_EQ(&family(parse_architecture(f->name)), f);
        EXPECT_STREQ(architecture_name(parse_architecture(f->name)), f->name);
        ASSERT_FALSE(f->presets().empty()) << f->name;
        for (const ModelPreset& p : f->presets()) {
            EXPECT_TRUE(presets.insert(p.name).second) << "preset " << p.name << " listed twice";
            EXPECT_EQ(architecture_name(p.config.arch), std::string(f->name)) << p.name;
            EXPECT_EQ(find_model_preset(p.name), &p.config);
        }
        EXPECT_EQ(model_preset(f->small_preset).arch, parse_architecture(f->name));
        EXPECT_EQ(model_preset(f->plan_preset).arch, parse_architecture(f->name));
    }
    EXPECT_EQ(names.size(), std::size_t(Architecture::params_only));
    EXPECT_THROW(family(Architecture::params_only), UsageError);
    EXPECT_THROW(parse_architecture("bert"), UsageError);
}

TEST(Families, ParameterCountsAreTheLayoutsTensors) {
    for (const ModelConfig& c : every_preset()) {
        SCOPED_TRACE(c.describe());
        const ParamLayout layout(c);
        std::size_t held = 0, stored = 0;
        for (const ParamUnit& u : layout.units())
            for (const ParamInfo& p : u.params) held += p.numel, stored += p.stored;
        EXPECT_EQ(c.num_params(), held);
        EXPECT_EQ(c.num_params_stored(), stored);
        EXPECT_EQ(layout.total_numel(), stored);
        EXPECT_EQ(c.num_params_f64(), double(held)); // exact: every count here is below 2^53
    }
}

TEST(Families, ConfigsRoundTripThroughBothJsonForms) {
    for (ModelConfig c : every_preset()) {
        SCOPED_TRACE(c.describe());
        c.vocab_multiple = ModelConfig::kDefaultVocabMultiple; // not written: the reader's default
        const nlohmann::json j = config_to_json(c);
        EXPECT_EQ(config_to_json(config_from_json(j)), j);
        const nlohmann::json hf = config_to_hf(c);
        EXPECT_EQ(hf["model_type"], family(c.arch).hf_model_type);
        EXPECT_EQ(config_to_hf(config_from_hf(hf, "round trip")), hf);
        EXPECT_EQ(config_from_hf(hf, "round trip").num_params(), c.num_params());
    }
}

// Weight names: every parameter is spelled canonically and none is one a reader skips.
TEST(Families, NoParameterIsIgnoredOrRenamedWhenRead) {
    for (const ModelConfig& c : every_preset()) {
        SCOPED_TRACE(c.describe());
        const Family& f = family(c.arch);
        const ParamLayout layout(c);
        for (const ParamUnit& u : layout.units())
            for (const ParamInfo& p : u.params) {
                EXPECT_EQ(f.canonical_name(p.name), p.name);
                EXPECT_FALSE(f.ignored_tensor(p.name, c)) << p.name;
            }
    }
}

// The GEMMs a family lists multiply exactly its 2-D weights: a block's forward products' k x n sum
// to the first block unit's matrices, the head's to the padded vocabulary times d.
TEST(Families, GemmShapesMultiplyTheLayoutsMatrices) {
    const std::int64_t tokens = 24;
    for (const ModelConfig& c : every_preset()) {
        SCOPED_TRACE(c.describe());
        const ParamLayout layout(c);
        std::size_t block_matrices = 0;
        for (const ParamInfo& p : layout.units()[layout.block_unit(0)].params)
            if (p.shape.size() == 2) block_matrices += p.numel;
        std::size_t block_weights = 0, head_weights = 0;
        for (const GemmShape& g : family(c.arch).gemm_shapes(c, tokens)) {
            const bool head = g.name.starts_with("head.");
            EXPECT_EQ(g.per_step, head ? 1 : c.layers) << g.name;
            if (!g.name.ends_with(".forward")) continue;
            EXPECT_EQ(g.m, tokens) << g.name;
            (head ? head_weights : block_weights) += std::size_t(g.n * g.k);
        }
        EXPECT_EQ(block_weights, block_matrices);
        EXPECT_EQ(head_weights, std::size_t(c.padded_vocab()) * std::size_t(c.hidden));
    }
}

// The cost counts scale as they must: kernel bytes with the tokens and the element size, the
// activation peak with the micro-batch when no layer is checkpointed.
TEST(Families, CostsScaleWithTheirInputs) {
    for (const ModelConfig& c : every_preset()) {
        SCOPED_TRACE(c.describe());
        const Family& f = family(c.arch);
        const KernelBytes one = f.kernel_bytes(c, 64, 2), two = f.kernel_bytes(c, 128, 2),
                          wide = f.kernel_bytes(c, 64, 4);
        for (auto part : {&KernelBytes::block_forward, &KernelBytes::block_backward,
                          &KernelBytes::head_forward, &KernelBytes::head_backward,
                          &KernelBytes::embed_forward, &KernelBytes::embed_backward}) {
            EXPECT_GT(one.*part, 0);
            EXPECT_DOUBLE_EQ(two.*part, 2 * one.*part);
            EXPECT_DOUBLE_EQ(wide.*part, 2 * one.*part);
        }
        const AttentionKind flash = AttentionKind::flash;
        EXPECT_EQ(f.activation_bytes(c, 2, 16, 2, {0}, flash),
                  2 * f.activation_bytes(c, 1, 16, 2, {0}, flash));
        EXPECT_EQ(f.gradient_scratch_bytes(c, 2, 16, 2), 2 * f.gradient_scratch_bytes(c, 1, 16, 2));
        for (const DeepSpeedModule& m : f.deepspeed_modules(c)) {
            EXPECT_GT(m.params, 0u) << m.name;
            EXPECT_LT(m.params, c.num_params()) << m.name;
        }
    }
}

} // namespace
} // namespace shardlab
