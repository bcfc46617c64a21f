// Weights as a Hugging Face folder (model/weights_writer.h, WeightsReader over shards): shards cut
// by size in layout order with save_pretrained's names, an index naming every tensor's shard and
// the tensors' total bytes, a config.json that maps back to the model; loading the folder, its
// index or a single file gives the same bits; a later save leaves no file of the earlier one; an
// index that disagrees with its shards is refused by name.
#include "core/error.h"
#include "model/families.h"
#include "model/hf_checkpoint.h"
#include "model/model_presets.h"
#include "model/safetensors.h"
#include "model/weights_io.h"
#include "tests/same_bits.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

using namespace shardlab;
namespace fs = std::filesystem;

namespace {
ModelConfig tiny_llama() {
    ModelConfig c = model_preset("tiny-llama");
    c.layers = 2, c.hidden = 64, c.heads = 4, c.kv_heads = 2, c.ffn_width = 96, c.context = 64;
    c.tied_head = false;
    c.validate();
    return c;
}

ModelWeights random_weights(const ModelConfig& c, std::uint64_t seed) {
    return {c, init_model(c, ParamLayout(c), seed)};
}

fs::path fresh_dir(const std::string& name) {
    const fs::path d = fs::path(::testing::TempDir()) / name;
    fs::remove_all(d);
    return d;
}

std::set<std::string> names_in(const fs::path& dir) {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
    return out;
}

// The same config is the caller's to check; these compare the values, bit for bit.
bool same_bits(const ModelWeights& a, const ModelWeights& b) {
    return shardlab::same_bits(a.units, b.units);
}

nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
}
} // namespace

TEST(WeightsFolder, ShardsByteLimitedInLayoutOrderWithAnIndexAndConfig) {
    const ModelConfig c = tiny_llama();
    const ModelWeights w = random_weights(c, 7);
    const fs::path dir = fresh_dir("wf_shards");
    const std::uint64_t limit = 40'000;
    save_weights(dir.string() + "/", w, DType::f32, limit);

    // The shards' sizes, recomputed here from the layout: greedy in layout order, a shard closes
    // before the tensor that would take it past the limit.
    const ParamLayout layout(c);
    std::vector<std::vector<std::string>> expect(1);
    std::uint64_t in_shard = 0, total = 0;
    for (const ParamUnit& u : layout.units())
        for (const ParamInfo& p : u.params) {
            if (!expect.back().empty() && in_shard + 4 * p.numel > limit)
                expect.emplace_back(), in_shard = 0;
            expect.back().push_back(p.name);
            in_shard += 4 * p.numel;
            total += 4 * p.numel;
        }
    ASSERT_GE(expect.size(), 3u);
    std::set<std::string> files{"config.json", "model.safetensors.index.json"};
    for (std::size_t s = 0; s < expect.size(); ++s)
        files.insert(fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, expect.size()));
    EXPECT_EQ(names_in(dir), files);

    const nlohmann::json index = read_json(dir / "model.safetensors.index.json");
    EXPECT_EQ(index["metadata"]["total_size"].get<std::uint64_t>(), total);
    std::size_t listed = 0;
    for (std::size_t s = 0; s < expect.size(); ++s) {
        const std::string shard =
            fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, expect.size());
        const SafeTensorsFile f = read_safetensors_index((dir / shard).string());
        ASSERT_EQ(f.tensors.size(), expect[s].size()) << shard;
        for (const std::string& name : expect[s]) {
            EXPECT_TRUE(f.find(name)) << name << " not in " << shard;
            EXPECT_EQ(index["weight_map"][name], shard) << name;
            ++listed;
        }
    }
    EXPECT_EQ(index["weight_map"].size(), listed);

    const ModelConfig hf = config_from_hf_file((dir / "config.json").string());
    EXPECT_EQ(config_to_json(hf), config_to_json(c));
    EXPECT_EQ(read_json(dir / "config.json")["torch_dtype"], "float32");
}

TEST(WeightsFolder, TheFolderItsIndexAndOneFileLoadTheSameBits) {
    const ModelConfig c = tiny_llama();
    const ModelWeights w = random_weights(c, 8);
    const fs::path dir = fresh_dir("wf_load");
    save_weights(dir.string() + "/", w, DType::f32, 30'000);
    save_weights((dir.parent_path() / "wf_load.safetensors").string(), w, DType::f32);
    for (const fs::path& p :
         {dir, dir / "model.safetensors.index.json", dir.parent_path() / "wf_load.safetensors"}) {
        const ModelWeights back = load_weights(p.string());
        EXPECT_EQ(config_to_json(back.config), config_to_json(c)) << p;
        EXPECT_TRUE(same_bits(back, w)) << p;
    }
    // A range read across a unit from the folder equals the loaded unit's elements.
    WeightsReader reader(dir.string());
    const ModelWeights whole = load_weights(dir.string());
    for (std::size_t u = 0; u < whole.units.size(); ++u) {
        const std::uint64_t n = whole.units[u].size(), begin = n / 3, count = n - n / 3 - 1;
        std::vector<float> part(count);
        reader.read(int(u), begin, count, part.data());
        EXPECT_EQ(std::memcmp(part.data(), whole.units[u].data() + begin, 4 * count), 0) << u;
    }
}

TEST(WeightsFolder, Bf16ShardsHoldTheRoundedValues) {
    const ModelConfig c = tiny_llama();
    const ModelWeights w = random_weights(c, 9);
    const fs::path dir = fresh_dir("wf_bf16");
    save_weights(dir.string() + "/", w, DType::bf16, 25'000);
    EXPECT_EQ(read_json(dir / "config.json")["torch_dtype"], "bfloat16");
    const ModelWeights back = load_weights(dir.string());
    for (std::size_t u = 0; u < w.units.size(); ++u)
        for (std::size_t i = 0; i < w.units[u].size(); ++i) {
            std::uint16_t b = 0;
            float rounded = 0;
            convert(&w.units[u][i], DType::f32, &b, DType::bf16, 1);
            convert(&b, DType::bf16, &rounded, DType::f32, 1);
            ASSERT_EQ(back.units[u][i], rounded) << u << " " << i;
        }
}

TEST(WeightsFolder, ALaterSaveLeavesNoFileOfTheEarlierOneAndKeepsOthers) {
    const ModelConfig c = tiny_llama();
    const fs::path dir = fresh_dir("wf_resave");
    save_weights(dir.string() + "/", random_weights(c, 1), DType::f32, 20'000);
    std::ofstream(dir / "README.md") << "the user's own file\n";
    const ModelWeights second = random_weights(c, 2);
    save_weights(dir.string(), second, DType::f32); // an existing directory: a folder, one file
    EXPECT_EQ(names_in(dir),
              (std::set<std::string>{"README.md", "config.json", "model.safetensors"}));
    EXPECT_TRUE(same_bits(load_weights(dir.string()), second));
}

TEST(WeightsFolder, AConfigJsonStandsInForMissingMetadata) {
    // A Hugging Face file carries no shardlab config: config.json beside it says what it is.
    const ModelConfig c = tiny_llama();
    const ModelWeights w = random_weights(c, 3);
    const fs::path dir = fresh_dir("wf_config");
    fs::create_directories(dir);
    save_weights((dir / "shardlab.safetensors").string(), w, DType::f32);
    SafeTensorsFile f = read_safetensors((dir / "shardlab.safetensors").string());
    f.metadata = {{"format", "pt"}};
    write_safetensors((dir / "model.safetensors").string(), f);
    fs::remove(dir / "shardlab.safetensors");
    try {
        load_weights(dir.string());
        ADD_FAILURE() << "a Llama without a config was loaded";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("no shardlab model config"), std::string::npos)
            << e.what();
    }
    std::ofstream(dir / "config.json") << config_to_hf(c).dump();
    const ModelWeights back = load_weights(dir.string());
    EXPECT_EQ(config_to_json(back.config), config_to_json(c));
    EXPECT_TRUE(same_bits(back, w));
}

TEST(WeightsFolder, AnIndexThatDisagreesWithItsShardsIsRefusedByName) {
    const ModelConfig c = tiny_llama();
    const fs::path dir = fresh_dir("wf_bad_index");
    save_weights(dir.string() + "/", random_weights(c, 4), DType::f32, 30'000);
    const fs::path index = dir / "model.safetensors.index.json";
    const nlohmann::json good = read_json(index);
    auto refusal = [&](const nlohmann::json& j) -> std::string {
        std::ofstream(index) << j.dump();
        try {
            WeightsReader r(dir.string());
        } catch (const UsageError& e) {
            return e.what();
        }
        return "(accepted)";
    };
    nlohmann::json moved = good;
    ASSERT_NE(good["weight_map"]["model.norm.weight"],
              good["weight_map"]["model.embed_tokens.weight"]);
    moved["weight_map"]["model.norm.weight"] = good["weight_map"]["model.embed_tokens.weight"];
    EXPECT_NE(refusal(moved).find("holds tensor 'model.norm.weight', which the index places in"),
              std::string::npos);
    nlohmann::json unlisted = good;
    unlisted["weight_map"].erase("model.norm.weight");
    EXPECT_NE(refusal(unlisted).find("which the index does not list"), std::string::npos);
    nlohmann::json ghost = good;
    ghost["weight_map"]["model.layers.9.mlp.up_proj.weight"] = good["weight_map"]["lm_head.weight"];
    EXPECT_NE(refusal(ghost).find("the index places tensor 'model.layers.9.mlp.up_proj.weight'"),
              std::string::npos);
    nlohmann::json deep = good;
    nlohmann::json* at = &deep["metadata"];
    for (int i = 0; i < 100; ++i) at = &((*at)["x"] = nlohmann::json::object());
    EXPECT_NE(refusal(deep).find("nests deeper than"), std::string::npos);
}
