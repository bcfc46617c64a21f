// Config files for subcommands: a TOML file of `flag = value` lines, keys named like the flags
// without the dashes (`micro-batch = 8`, `offload = true`). Each value goes through the same
// CLI11 option as the flag — the same types, the same checks — unless that flag was given on
// the command line, which always wins.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace shardlab {

// Throws UsageError naming the file and the key for unknown keys, bad values and TOML errors.
void apply_config_file(CLI::App& cmd, const std::string& path);

// The same for the file's text, `path` naming it in messages: what apply_config_file does once it
// has read the file, and what fuzz/fuzz_config.cpp feeds text from memory.
void apply_config_text(CLI::App& cmd, std::string_view text, const std::string& path);

} // namespace shardlab
