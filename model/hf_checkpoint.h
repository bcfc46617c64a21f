// Hugging Face checkpoints as they are published: a folder with config.json and either one
// model.safetensors or shards model-0000i-of-0000n.safetensors listed by
// model.safetensors.index.json ({"metadata": {"total_size": bytes}, "weight_map": {tensor:
// shard}}). This file resolves what `--weights` names into the files to read, maps config.json to a
// ModelConfig and back, and builds the index (model/weights_writer.h writes it beside shards).
#pragma once

#include "model/model_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardlab {

struct CheckpointFiles {
    std::vector<std::string> shards;               // the .safetensors files, in index order
    std::map<std::string, std::string> weight_map; // tensor -> shard path (empty: one file)
    std::optional<std::string> config_json;        // config.json beside them, when present
};

// "model-#####-of-#####.safetensors" (# a digit): a shard's file name, as save_pretrained and
// model/weights_writer.h name them.
bool is_shard_name(const std::string& name);

// `path`: a .safetensors file, an index .json, or a folder holding model.safetensors or
// model.safetensors.index.json. Throws UsageError naming what is missing and what was looked for.
CheckpointFiles resolve_checkpoint(const std::string& path);

// A Hugging Face config.json as a ModelConfig of the family whose hf_model_type its model_type is
// (Family::from_hf: "gpt2", "llama"); `where` names the file in errors. Refuses what the family
// does not compute (another rope_scaling, biases, activation, head_dim), naming the field.
ModelConfig config_from_hf(const nlohmann::json& j, const std::string& where);
// The same read from a config.json file (JSON nested at most kMaxJsonDepth deep).
ModelConfig config_from_hf_file(const std::string& path);
nlohmann::json config_to_hf(const ModelConfig& c); // Family::to_hf

// The index a sharded save writes: every tensor's shard (file names relative to the folder).
nlohmann::json checkpoint_index(const std::map<std::string, std::string>& weight_map,
                                std::uint64_t total_bytes);

} // namespace shardlab
