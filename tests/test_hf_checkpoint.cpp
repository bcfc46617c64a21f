// Hugging Face checkpoints as published: config.json mapped to a ModelConfig (checked on the
// published configs of SmolLM-135M and TinyLlama-1.1B: the parameter counts their model cards
// give), refusals naming the field, and `--weights` resolved from a file, an index or a folder.
#include "core/error.h"
#include "model/hf_checkpoint.h"
#include "model/model_presets.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace shardlab;
namespace fs = std::filesystem;

namespace {
// HuggingFaceTB/SmolLM-135M config.json (the fields that shape the model).
nlohmann::json smollm_135m() {
    return nlohmann::json::parse(R"({
      "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
      "hidden_size": 576, "intermediate_size": 1536, "num_attention_heads": 9,
      "num_hidden_layers": 30, "num_key_value_heads": 3, "max_position_embeddings": 2048,
      "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "rope_scaling": null,
      "tie_word_embeddings": true, "vocab_size": 49152, "attention_bias": false})");
}
// TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T config.json.
nlohmann::json tinyllama() {
    return nlohmann::json::parse(R"({
      "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
      "hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 32,
      "num_hidden_layers": 22, "num_key_value_heads": 4, "max_position_embeddings": 2048,
      "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "rope_scaling": null,
      "tie_word_embeddings": false, "vocab_size": 32000})");
}

std::string refusal(const nlohmann::json& j) {
    try {
        config_from_hf(j, "config.json");
    } catch (const UsageError& e) {
        return e.what();
    }
    return "(accepted)";
}

void touch(const fs::path& p, const std::string& text = "x") {
    std::ofstream(p) << text;
}
} // namespace

TEST(HfConfig, PublishedLlamaConfigsGiveTheirParameterCounts) {
    const ModelConfig s = config_from_hf(smollm_135m(), "smollm");
    EXPECT_EQ(s.arch, Architecture::llama);
    EXPECT_EQ(s.kv_heads, 3);
    EXPECT_TRUE(s.tied_head);
    EXPECT_EQ(s.num_params(), 134515008u);
    const ModelConfig t = config_from_hf(tinyllama(), "tinyllama");
    EXPECT_FALSE(t.tied_head);
    EXPECT_EQ(t.ffn(), 5632);
    EXPECT_EQ(t.num_params(), 1100048384u);
    // And back: the same fields, so a saved checkpoint's config.json reads as it was.
    const ModelConfig again = config_from_hf(config_to_hf(t), "round trip");
    EXPECT_EQ(config_to_hf(again), config_to_hf(t));
    EXPECT_EQ(again.num_params(), t.num_params());
}

// meta-llama/Llama-3.2-1B config.json: Llama 3's scaled RoPE, a tied head, V = 128,256.
TEST(HfConfig, Llama32ReadsItsRopeScalingAndCountsItsParameters) {
    const nlohmann::json j = nlohmann::json::parse(R"({
      "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
      "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
      "num_hidden_layers": 16, "num_key_value_heads": 8, "max_position_embeddings": 131072,
      "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": true,
      "vocab_size": 128256, "head_dim": 64, "attention_bias": false, "mlp_bias": false,
      "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"}})");
    const ModelConfig c = config_from_hf(j, "llama-3.2-1b");
    EXPECT_EQ(c.num_params(),
              1'235'814'400u); // the model card's 1.24B, counted by hand in test_plan
    EXPECT_EQ(c.rope_factor, 32.0);
    EXPECT_EQ(c.rope_low_freq, 1.0);
    EXPECT_EQ(c.rope_high_freq, 4.0);
    EXPECT_EQ(c.rope_original_context, 8192);
    EXPECT_EQ(config_to_json(c), config_to_json(model_preset("llama-3.2-1b")));
    EXPECT_EQ(config_from_hf(config_to_hf(c), "round trip").rope_factor, 32.0);
}

TEST(HfConfig, RefusesWhatTheFamilyDoesNotComputeNamingTheField) {
    nlohmann::json scaled = smollm_135m();
    scaled["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}};
    EXPECT_NE(refusal(scaled).find("rope_scaling: \"low_freq_factor\" is missing"),
              std::string::npos);
    scaled["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    EXPECT_NE(refusal(scaled).find("rope_scaling of type 'yarn'"), std::string::npos);
    nlohmann::json bias = smollm_135m();
    bias["attention_bias"] = true;
    EXPECT_NE(refusal(bias).find("attention_bias"), std::string::npos);
    nlohmann::json gelu = smollm_135m();
    gelu["hidden_act"] = "gelu";
    EXPECT_NE(refusal(gelu).find("hidden_act"), std::string::npos);
    nlohmann::json other = smollm_135m();
    other["model_type"] = "mistral";
    EXPECT_NE(refusal(other).find("model_type 'mistral'"), std::string::npos);
    nlohmann::json missing = smollm_135m();
    missing.erase("hidden_size");
    EXPECT_NE(refusal(missing).find("\"hidden_size\" is missing"), std::string::npos);
    // Integers are range-checked, as shardlab's own config is: 2^32 + 3 once read as 3 layers.
    nlohmann::json wrapped = smollm_135m();
    wrapped["num_hidden_layers"] = 4294967299ull;
    EXPECT_NE(refusal(wrapped).find("\"num_hidden_layers\" is 4294967299, out of range"),
              std::string::npos);
    nlohmann::json fraction = smollm_135m();
    fraction["intermediate_size"] = 1536.5;
    EXPECT_NE(refusal(fraction).find("\"intermediate_size\" is 1536.5, not a whole number"),
              std::string::npos);
    nlohmann::json gqa = smollm_135m();
    gqa["num_key_value_heads"] = 4; // does not divide 9 heads
    EXPECT_NE(refusal(gqa), "(accepted)");
    nlohmann::json heads = smollm_135m();
    heads["num_attention_heads"] = 7; // does not divide hidden 576: the file is named
    EXPECT_NE(refusal(heads).find("config.json: describes an invalid model: hidden 576 is not "
                                  "divisible by heads 7"),
              std::string::npos)
        << refusal(heads);
    EXPECT_NE(refusal(heads).find("with a Hugging Face folder, fix its config.json"),
              std::string::npos)
        << refusal(heads);
}

TEST(CheckpointFiles, ResolvesAFileAnIndexAndAFolder) {
    const fs::path dir = fs::path(::testing::TempDir()) / "hf_ckpt";
    fs::remove_all(dir);
    fs::create_directories(dir);
    touch(dir / "model-00001-of-00002.safetensors");
    touch(dir / "model-00002-of-00002.safetensors");
    touch(dir / "config.json", smollm_135m().dump());
    touch(dir / "model.safetensors.index.json",
          checkpoint_index(
              {{"model.embed_tokens.weight", "model-00001-of-00002.safetensors"},
               {"model.norm.weight", "model-00002-of-00002.safetensors"},
               {"model.layers.0.mlp.up_proj.weight", "model-00001-of-00002.safetensors"}},
              123)
              .dump());
    for (const fs::path& p : {dir, dir / "model.safetensors.index.json"}) {
        const CheckpointFiles f = resolve_checkpoint(p.string());
        ASSERT_EQ(f.shards.size(), 2u);
        EXPECT_EQ(f.weight_map.at("model.norm.weight"),
                  (dir / "model-00002-of-00002.safetensors").string());
        ASSERT_TRUE(f.config_json);
        EXPECT_EQ(*f.config_json, (dir / "config.json").string());
    }
    const CheckpointFiles one =
        resolve_checkpoint((dir / "model-00001-of-00002.safetensors").string());
    EXPECT_EQ(one.shards.size(), 1u);
    EXPECT_TRUE(one.weight_map.empty());

    fs::remove(dir / "model-00002-of-00002.safetensors"); // a shard the index names is missing
    try {
        resolve_checkpoint(dir.string());
        ADD_FAILURE() << "a missing shard was accepted";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("lists shard 'model-00002-of-00002.safetensors', "
                                             "which is missing"),
                  std::string::npos)
            << e.what();
    }
    fs::remove_all(dir);
    EXPECT_THROW(resolve_checkpoint(dir.string()), UsageError);
}
