// A model's weights written a piece at a time, as one .safetensors file or as a Hugging Face
// folder: config.json, then model.safetensors, or — when the weights exceed the shard size —
// model-0000i-of-0000n.safetensors with model.safetensors.index.json naming every tensor's shard
// (what save_pretrained writes). --save-weights, `shardlab init` and `checkpoint export` all write
// through it, so a model never has to be whole in one process's memory.
#pragma once

#include "core/dtype.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "model/safetensors_writer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shardlab {

// save_pretrained's default max_shard_size ("5GB", decimal).
inline constexpr std::uint64_t kDefaultShardBytes = 5'000'000'000;

// A path names a folder when it ends in '/' or is an existing directory; else a .safetensors file.
bool is_weights_folder(const std::string& path);

class WeightsWriter {
  public:
    // Creates the file(s) as temporaries (a folder is created if missing). Tensors keep the
    // layout's order (unit by unit); a shard closes before a tensor that would take it past
    // `shard_bytes` (a larger tensor has a shard to itself). Throws Error naming the file.
    WeightsWriter(const std::string& path, const ModelConfig& config, DType store_as,
                  std::uint64_t shard_bytes = kDefaultShardBytes);
    ~WeightsWriter(); // without finish(): the temporaries are removed, nothing is replaced

    // `n` fp32 values of tensor `param` of `unit`, its true elements [first, first + n) (wte's
    // padding rows are not in the file), stored as the writer's dtype.
    void write(int unit, std::size_t param, std::uint64_t first, const float* values,
               std::size_t n);
    // Every shard synced and renamed into place, then (folder) the index and config.json, then the
    // files of an earlier save there that this one does not replace are removed.
    void finish();
    // The files finish() writes, shards first.
    std::vector<std::string> files() const;

  private:
    std::string shard_path(std::size_t s) const;

    struct Place {
        std::size_t shard;
        std::size_t entry; // the tensor's index within its shard
    };
    std::string path_;
    bool folder_;
    ModelConfig config_;
    DType store_as_;
    ParamLayout layout_;
    std::vector<std::vector<Place>> place_; // [unit][param]
    std::vector<std::string> shard_names_;  // file names (folder) or the one path
    std::vector<std::vector<std::string>> shard_tensors_;
    std::vector<std::unique_ptr<SafeTensorsWriter>> shards_;
    std::vector<unsigned char> converted_;
};

} // namespace shardlab
