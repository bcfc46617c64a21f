// One rank's file of a checkpoint, independent of the rank count that reads it: for every
// sharding unit, the global element range [begin, begin + count) this rank stored, with fp32
// master (or params), m and v for exactly those elements; plus the step, scheduler and
// loss-scaler state; closed by a checksum. Rank q of N stores the q-th of N equal slices of each
// unit (stored_range), whatever its ZeRO stage, so a job at any rank count M can find, for any
// range it owns, which files hold it (N -> M resume, `shardlab checkpoint export`).
//
// Layout of rank-Q.bin (little-endian): "SHLBCKP2", u32 rank, u32 ranks, u32 units, i32 step,
// i32 iteration, f32 loss_scale, i32 good_steps, i64 skipped; per unit: u64 numel (the unit's
// size), u64 begin, u64 count, then count floats each of master, m, v; finally u64 FNV-1a of
// every byte before it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

struct ElementRange {
    std::uint64_t begin = 0, count = 0;
};

// The slice of a unit of `numel` elements that rank q of `ranks` stores: numel padded to a
// multiple of ranks, cut into equal shards, the padding left out (so the count may be 0).
ElementRange stored_range(std::uint64_t numel, int ranks, int q);

// The bytes of rank q's file (encode_checkpoint_file's output) for units of `numel` elements:
// its header and checksum, and per unit the range and 12 bytes an element (master, m, v).
std::uint64_t checkpoint_file_bytes(const std::vector<std::uint64_t>& numel, int ranks, int q);

struct CheckpointSection {
    std::uint64_t numel = 0; // the whole unit
    ElementRange range;      // what this file holds of it
    std::vector<float> master, m, v;
};

struct CheckpointFile {
    int rank = 0, ranks = 1;
    int step = 0;      // optimizer updates applied (AdamW's bias correction counts these)
    int iteration = 0; // training-loop steps done, skipped ones included (the data position)
    float loss_scale = 1;
    int good_steps = 0;
    long skipped = 0;
    std::vector<CheckpointSection> units;
};

std::string encode_checkpoint_file(const CheckpointFile& f);
// Throws Error naming `path` when the bytes are not a complete, intact checkpoint file (bad magic,
// truncated, trailing bytes, checksum mismatch, a unit's range other than the one its rank
// stores), and UsageError for a format-1 file (an older shardlab's). Never allocates more than the
// bytes given could hold.
CheckpointFile decode_checkpoint_file(const std::string& bytes, const std::string& path);
// Reads and decodes DIR/rank-Q.bin.
CheckpointFile read_checkpoint_file(const std::string& path);

} // namespace shardlab
