// Config files for subcommands: a TOML file of `flag = value` lines, keys named like the flags
// without the dashes (`micro-batch = 8`, `offload = true`). Each value goes through the same
// CLI11 option as the flag — the same types, the same checks — unless that flag was given on
// the command line, which always wins.
#pragma once

#include <CLI/CLI.hpp>

#include <set>
#include <string>
#include <string_view>

namespace shardlab {

// Throws UsageError naming the file and the key for unknown keys, bad values and TOML errors.
void apply_config_file(CLI::App& cmd, const std::string& path);

// The same for the file's text, `path` naming it in messages: what apply_config_file does once it
// has read the file, and what fuzz/fuzz_config.cpp feeds text from memory.
void apply_config_text(CLI::App& cmd, std::string_view text, const std::string& path);

// The long names ("--zero") of the options given on the command line. Taken before any file is
// applied: a file's value makes its option look given too.
std::set<std::string> command_line_flags(const CLI::App& cmd);

// Stores `text` in `opt` as if it had followed the flag: the same conversion and checks. A bad
// value throws UsageError "<source>: bad value for '<key>': <CLI11's reason>".
void set_option_text(CLI::Option& opt, const std::string& text, const std::string& source,
                     const std::string& key);

} // namespace shardlab
