// Training checkpoints: DIR/checkpoint/ holds meta.json (the run's config, N, step) and one
// rank-R.bin per rank with that rank's owned state (fp32 master or params, m, v) and the step and
// loss-scaler state, closed by a checksum. Ranks write (and fsync) into DIR/checkpoint.tmp/; once
// all have succeeded, rank 0 moves the old checkpoint to checkpoint.prev, the new one into place,
// and drops prev — a crash at any point leaves one complete checkpoint, which loading finds. The
// run directory is assumed to be on a filesystem every rank shares.
#pragma once

#include "optim/zero_engine.h"

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <string>

namespace shardlab {

void save_checkpoint(const std::string& dir, const nlohmann::json& config, int ranks, int rank,
                     const ZeroEngine::OwnedState& state, MPI_Comm comm);

// `dir` is the run directory (holding checkpoint/) or the checkpoint directory itself. Throws
// Error when it was written with another N or another training config (naming the difference),
// or when a file is missing, truncated or corrupt.
ZeroEngine::OwnedState load_checkpoint(const std::string& dir, const nlohmann::json& config,
                                       int ranks, int rank);

} // namespace shardlab
