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

// The checkpoint directory a resume reads, decided by rank 0 and broadcast, so that every rank
// reads the same one: `dir` itself when it holds meta.json, else dir/checkpoint — or, when a save
// died between its two renames, dir/checkpoint.prev. Call it on every rank.
std::string agree_checkpoint_dir(const std::string& dir, MPI_Comm comm);

// Reads this rank's state from the checkpoint directory `cdir` (from agree_checkpoint_dir).
// Throws Error when it was written with another N or another training config (naming the
// difference), or when a file is missing, truncated or corrupt.
ZeroEngine::OwnedState load_checkpoint(const std::string& cdir, const nlohmann::json& config,
                                       int ranks, int rank);

} // namespace shardlab
