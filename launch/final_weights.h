// The end of a run: the fp32 master weights' SHA-256 and, with --save-weights, the safetensors
// file or Hugging Face folder — both streamed one sharding unit at a time (gathered on the device
// side, then hashed by every rank and written by rank 0 in pieces of 16 MB, released), so no rank
// ever holds the whole model in fp32 for it, nor a unit twice.
#pragma once

#include "model/model_config.h"
#include "model/weights_writer.h"
#include "optim/zero_engine.h"

#include <string>

namespace shardlab {

struct FinalWeights {
    std::string hash;       // every rank
    std::string save_error; // the lead's: why --save-weights was not written (empty: it was)
};

// Collective over the engine's ranks. `save_path` empty: hash only; a folder: shards of at most
// `shard_bytes` (model/weights_writer.h). Files that cannot be written (a full disk) are removed
// and the error returned, never thrown: the run's report comes next. `piece`: the elements handed
// over at a time (ZeroEngine::for_each_consolidated_piece).
FinalWeights hash_and_save_weights(ZeroEngine& engine, const ModelConfig& config,
                                   const std::string& save_path, bool lead,
                                   std::uint64_t shard_bytes = kDefaultShardBytes,
                                   std::size_t piece = ZeroEngine::kConsolidationPiece);

} // namespace shardlab
