// A model's weights (any family: GPT-2, Llama) to and from safetensors, in Hugging Face's names
// and shapes, with the model config in the file's metadata ("config": JSON). Loading checks the
// file against the config's layout and names every missing, unexpected or mis-shaped tensor in one
// error.
#pragma once

#include "core/dtype.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "model/safetensors.h"

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
// Stores every tensor as fp32 or bf16 (rounded to nearest even).
void save_weights(const std::string& path, const ModelWeights& weights, DType store_as);

// Reads weights; GPT-2 names with or without the "transformer." prefix are accepted, and the tied
// "lm_head.weight" and the causal-mask buffers "*.attn.bias" / "*.attn.masked_bias" are ignored
// (a Llama's: a tied head's "lm_head.weight" and "*.rotary_emb.inv_freq"). Without a "config"
// metadata entry (a Hugging Face GPT-2 checkpoint) the config is inferred from the tensor shapes,
// with GPT-2's head size of 64. The units are laid out with wte padded to a
// multiple of `vocab_multiple` rows (config.vocab_multiple is set to it).
ModelWeights load_weights(const std::string& path,
                          int vocab_multiple = ModelConfig::kDefaultVocabMultiple);

// The same for a file already read, `path` naming it in messages: what load_weights does after
// read_safetensors, and what fuzz/fuzz_safetensors.cpp runs on every file the reader accepts.
ModelWeights weights_from_file(const SafeTensorsFile& f, const std::string& path,
                               int vocab_multiple = ModelConfig::kDefaultVocabMultiple);

// A weights file read in pieces: the header is read and checked against the model config when
// it opens (every tensor present and shaped right, as load_weights checks), then any element range
// of any unit is read on demand, converted to fp32 and checked finite. `train --init` reads only
// what a rank holds, so no rank reads the whole model.
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
    SafeTensorsFile index_; // the tensors' places, no data
    ModelConfig config_;
    ParamLayout layout_;
    std::vector<std::vector<std::size_t>> where_; // [unit][param]: index into index_.tensors
    std::ifstream in_;
};

} // namespace shardlab
