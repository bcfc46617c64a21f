// Training checkpoints that any rank count can resume: DIR/checkpoint/ holds meta.json (the run's
// config, the rank count N that wrote it, the step, every unit's size) and one rank-Q.bin per
// rank (optim/checkpoint_file.h: global element ranges of fp32 master, m and v, the step, the
// scheduler and loss-scaler state, checksummed). Ranks write (and fsync) into
// DIR/checkpoint.tmp/; once all have succeeded, rank 0 moves the old checkpoint to
// checkpoint.prev, the new one into place, and drops prev — a crash at any point leaves one
// complete checkpoint, which loading finds. The run directory is assumed to be on a filesystem
// every rank shares.
//
// A resume at M ranks (M may differ from N, and so may the ZeRO stage) asks for the ranges it
// owns and reads only the files that hold them. The data position is the iteration: with the same
// global batch, step k reads the same samples however the batch is split over ranks.
#pragma once

#include "comm/watched_calls.h"
#include "model/model_config.h"
#include "optim/checkpoint_file.h"
#include "optim/zero_engine.h"

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

// `numel`: every unit's size; `s.offset`: where each of s's vectors starts in its unit. The ranks
// agree through `comm`'s watched calls: a rank stopped or stuck in a save ends the job after the
// collective timeout, named, instead of hanging it. `keep_previous`: the checkpoint this one
// replaces stays as dir/checkpoint.prev until drop_previous_checkpoint (a run keeps it until the
// new one's next step proved finite).
// `ranks` and `rank` name the files (rank-<rank>.bin of `ranks`); a rank with `writes` false
// (a hybrid run's replicas beyond the first, which hold the same state) writes no file but takes
// part in the agreement. comm's rank 0 writes meta.json and swaps the directories.
void save_checkpoint(const std::string& dir, const nlohmann::json& config, int ranks, int rank,
                     const ZeroEngine::OwnedState& s, const std::vector<std::uint64_t>& numel,
                     WatchedComm& comm, bool keep_previous = false, bool writes = true);

// Rank 0, between saves: removes dir/checkpoint.prev when dir/checkpoint is complete.
void drop_previous_checkpoint(const std::string& dir);

// Rank 0, when the latest checkpoint holds a diverged state: moves it to dir/checkpoint.diverged
// (replacing an older one) and dir/checkpoint.prev, if there is one, back into its place.
// Returns the iteration of the checkpoint now in place (the training steps it had run, meta.json's
// "iteration"; its "step" counts the updates applied), or 0 when none is.
int set_aside_latest_checkpoint(const std::string& dir);

// The checkpoint folders a run directory may hold: the latest, the one before it, a save under
// way, and those set aside (a diverged state, an unusable latest).
inline constexpr const char* kCheckpointDirs[] = {"checkpoint", "checkpoint.prev", "checkpoint.tmp",
                                                  "checkpoint.diverged", "checkpoint.rejected"};

// For a message about a checkpoint `cdir` that cannot be used: "resume from RUN/checkpoint.prev
// (step K) instead" when that earlier one is kept beside it, else that none is.
std::string earlier_checkpoint_hint(const std::string& cdir);

// Rank 0, once a run in `dir` has resumed from dir/checkpoint.prev (the latest not usable): the
// latest is set aside as dir/checkpoint.rejected (replacing an older one) and the one resumed
// from takes its place, so that no later save or drop removes the state the run stands on.
// Returns the set-aside path, or "" when `resumed_from` was not dir/checkpoint.prev.
std::string promote_resumed_previous(const std::string& dir, const std::string& resumed_from);

// The checkpoint directory inside `dir`: `dir` itself when it holds meta.json, else
// dir/checkpoint — or, when a save died between its two renames, dir/checkpoint.prev.
std::string find_checkpoint_dir(const std::string& dir);

// The run directory `dir` names: `dir`, or its parent when `dir` is itself a checkpoint
// directory (holds meta.json): `--resume RUN/checkpoint` continues RUN, not a run inside it.
std::string run_directory_of(const std::string& dir);

// Whether `dir` holds a complete checkpoint (find_checkpoint_dir's choice has its meta.json).
bool has_checkpoint(const std::string& dir);

// The checkpoint directory a resume reads, decided by rank 0 and broadcast, so that every rank
// reads the same one (find_checkpoint_dir). Call it on every rank.
std::string agree_checkpoint_dir(const std::string& dir, WatchedComm& comm);

// meta.json of checkpoint directory `cdir`; UsageError when there is none or it is unreadable.
nlohmann::json read_checkpoint_meta(const std::string& cdir);

// The size of the largest rank-*.bin in `cdir` (0 if none): what loading holds of one file at a
// time, twice (read whole, then decoded), beside the owned state.
std::uint64_t largest_rank_file_bytes(const std::string& cdir);

// The model a checkpoint holds, laid out as it was saved: its units have wte padded to the run's
// "vocab_multiple" (1 when absent: checkpoints from before padding existed).
ModelConfig checkpoint_model(const nlohmann::json& meta);

// rank-Q.bin of the N-rank checkpoint in `cdir`, read and checked to be that rank's file: its
// header says rank q of N, and it holds the slice stored_range gives of each unit in `numel`.
// Throws Error naming the file when it does not (a file copied over another's, say).
CheckpointFile read_rank_file(const std::string& cdir, int q, int N,
                              const std::vector<std::uint64_t>& numel);

// Reads the ranges `want` (per unit, in that unit's elements; elements past its size read as 0)
// from the checkpoint in `cdir`, whatever rank count wrote it. Throws UsageError when it was
// written for another model or training config (naming the difference), Error when a file is
// missing, truncated or corrupt. The result's offsets are want's begins.
ZeroEngine::OwnedState load_checkpoint(const std::string& cdir, const nlohmann::json& config,
                                       const std::vector<std::uint64_t>& numel,
                                       const std::vector<ElementRange>& want);

} // namespace shardlab
