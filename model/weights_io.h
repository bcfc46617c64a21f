// A model's weights (any family: GPT-2, Llama) to and from safetensors, in Hugging Face's names
// and shapes, with the model config in the file's metadata ("config": JSON). A path is a
// .safetensors file, or a Hugging Face folder (config.json with model.safetensors or shards and
// their index; model/hf_checkpoint.h), or the index itself. Loading checks the tensors against the
// config's layout and names every missing, unexpected or mis-shaped tensor in one error.
#pragma once

#include "core/dtype.h"
#include "model/hf_checkpoint.h"
#include "model/model_config.h"
#include "model/param_init.h"
#include "model/param_layout.h"
#include "model/safetensors.h"
#include "model/weights_writer.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace shardlab {

struct ModelWeights {
    ModelConfig config;
    std::vector<std::vector<float>> units; // fp32 values, one vector per sharding unit
};

// Files hold the true vocabulary (wte [V, d]) whatever config.vocab_multiple is: saving writes the
// first V rows of the padded wte, loading fills the padding rows with zeros.
// Stores every tensor as fp32 or bf16 (rounded to nearest even). A folder path (ending in '/' or
// an existing directory) gets Hugging Face's layout, in shards of at most `shard_bytes`
// (model/weights_writer.h).
void save_weights(const std::string& path, const ModelWeights& weights, DType store_as,
                  std::uint64_t shard_bytes = kDefaultShardBytes);
// The same for weights drawn (or read) unit by unit as they are written: only one unit is ever in
// memory, so `shardlab init` of a 7B model needs its largest unit, not 28 GB.
void save_weights(const std::string& path, const ModelConfig& config, const InitialValues& values,
                  DType store_as, std::uint64_t shard_bytes = kDefaultShardBytes);

// Reads weights; GPT-2 names with or without the "transformer." prefix are accepted, and the tied
// "lm_head.weight" and the causal-mask buffers "*.attn.bias" / "*.attn.masked_bias" are ignored
// (a Llama's: a tied head's "lm_head.weight" and "*.rotary_emb.inv_freq"). Without a "config"
// metadata entry the config is read from a config.json beside the weights (Hugging Face's
// checkpoints), else — a bare GPT-2 file — inferred from the tensor shapes with GPT-2's head size
// of 64. The units are laid out with wte padded to a multiple of `vocab_multiple` rows
// (config.vocab_multiple is set to it).
ModelWeights load_weights(const std::string& path,
                          int vocab_multiple = ModelConfig::kDefaultVocabMultiple);

// The same for a file already read, `path` naming it in messages: what load_weights does after
// read_safetensors, and what fuzz/fuzz_safetensors.cpp runs on every file the reader accepts.
ModelWeights weights_from_file(const SafeTensorsFile& f, const std::string& path,
                               int vocab_multiple = ModelConfig::kDefaultVocabMultiple);

// Weights read in pieces: every shard's header is read and checked against the model config when
// it opens (every tensor present once and shaped right, in the shard the index names), then any
// element range of any unit is read on demand from its shard, converted to fp32 and checked finite.
// `train --init` reads only what a rank holds, so no rank reads the whole model.
class WeightsReader {
  public:
    // Throws UsageError naming the problem. Units are laid out with wte padded to a multiple of
    // `vocab_multiple` rows; config().vocab_multiple is that.
    explicit WeightsReader(const std::string& path,
                           int vocab_multiple = ModelConfig::kDefaultVocabMultiple);
    const ModelConfig& config() const { return config_; }
    // Elements [begin, begin + count) of `unit` (wte's padding rows read as zeros); a NaN or
    // infinity is a UsageError naming it.
    void read(int unit, std::uint64_t begin, std::uint64_t count, float* out);

  private:
    std::string path_;
    CheckpointFiles files_;
    std::vector<std::size_t> shard_of_; // [tensor of index_]: its shard in files_.shards
    SafeTensorsFile index_;             // every shard's tensors and their places, no data
    ModelConfig config_;
    ParamLayout layout_;
    std::vector<std::vector<std::size_t>> where_; // [unit][param]: index into index_.tensors
    std::vector<std::ifstream> in_;               // one per shard
};

} // namespace shardlab
