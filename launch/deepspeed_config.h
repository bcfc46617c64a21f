// `shardlab train --deepspeed-config ds_config.json`: the common keys of a DeepSpeed config read
// as shardlab's train flags, so a DeepSpeed user can bring the file they have. One function per
// key group (ZeRO, precision, batch, clipping, optimizer, scheduler); docs/DECISIONS.md
// ("DeepSpeed config mapping") has the table and the reasons. Keys present but not mapped are
// listed as ignored; what shardlab cannot do as DeepSpeed would (NVMe or parameter offload,
// another optimizer or scheduler, a static loss scale) is refused; "auto" (the Hugging Face
// integration's placeholder) counts as not given. Flags on the command line win, as with
// --config; --config and this file must agree where both set an option.
#pragma once

#include "launch/train_options.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace shardlab {

// One train flag's value from the file, as it would be typed after the flag.
struct DsSetting {
    enum class Kind {
        given,   // from keys in the file: --config must agree with it
        implied, // DeepSpeed's default for an absent key: --config may set another value
        check,   // never applied, only compared with --config (--global-batch: train_batch_size)
    };
    std::string flag;   // "--zero"
    std::string value;  // "2"
    std::string source; // the keys behind it, for messages: "zero_optimization.stage 2"
    Kind kind = Kind::given;
};

struct DsMapping {
    std::vector<DsSetting> settings;           // at most one per flag
    std::vector<std::string> ignored;          // keys present but not mapped, dotted: "a.b.c"
    std::vector<std::string> automatic;        // keys set to "auto": left to flags and defaults
    std::vector<std::string> notes;            // where the run will differ from DeepSpeed's
    std::optional<long long> train_batch_size; // given, or derived by DeepSpeed's rule
};

// The settings of a parsed file for a run on `world_size` ranks (DeepSpeed's world size: the
// batch rule needs it). Throws UsageError naming `path` and the key for wrong types,
// contradictions inside the file and what shardlab cannot do.
DsMapping map_deepspeed_config(const nlohmann::json& doc, int world_size, const std::string& path);

// Reads the file, applies its settings to the options `cmd` did not get on the command line
// (`cli`: command_line_flags, taken before --config was applied) and returns the lines rank 0
// prints at startup: what was applied, where flags won, the ignored and "auto" keys, and the
// notes. An option --config set must have the file's value (else UsageError), except DeepSpeed's
// defaults, which yield to it. `o` is the options `cmd` fills.
std::vector<std::string> apply_deepspeed_config(CLI::App& cmd, const TrainOptions& o,
                                                const std::set<std::string>& cli, int world_size);

// The same for the file's text (o.deepspeed_config names it in messages): what
// apply_deepspeed_config does once it has read the file, and what fuzz/ feeds from memory.
std::vector<std::string> apply_deepspeed_text(CLI::App& cmd, const TrainOptions& o,
                                              const std::set<std::string>& cli, int world_size,
                                              std::string_view text);

} // namespace shardlab
