// toml++ parses the file; CLI11 converts and stores each value.
#include "launch/config_file.h"

#include "core/error.h"
#include "core/read_file.h"

#include <toml++/toml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace shardlab {

namespace {
std::string value_text(const toml::node& v, const std::string& key, const std::string& path) {
    if (auto s = v.value<std::string>(); s && v.is_string()) return *s;
    if (v.is_boolean()) return *v.value<bool>() ? "true" : "false";
    if (v.is_integer()) return std::to_string(*v.value<std::int64_t>());
    if (v.is_floating_point()) {
        std::ostringstream o;
        o.precision(17);
        o << *v.value<double>();
        return o.str();
    }
    throw UsageError("config file '" + path + "': key '" + key +
                     "' must be a string, number or boolean");
}

// toml++ limits nested arrays and inline tables (TOML_MAX_NESTED_VALUES) but not dotted keys:
// `a.a.a...` 100,000 levels deep overflows its stack. shardlab's keys are flat flag names, so any
// line that nests (dots, brackets, braces outside strings and comments) deeper than this is refused
// before toml++ sees it.
constexpr int kMaxTomlNesting = 64;

void check_toml_nesting(std::string_view text, const std::string& path) {
    char quote = 0;       // inside a string opened by this character
    bool triple = false;  // ... a multi-line one (""" or '''), which may span lines
    bool comment = false; // after '#', to the end of the line
    int line = 1, level = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool opens_triple = text.substr(i, 3) == std::string(3, c);
        if (c == '\n') {
            ++line, level = 0, comment = false;
            if (!triple) quote = 0;
        } else if (comment) {
            continue; // to the end of the line
        } else if (quote) {
            if (c == '\\' && quote == '"')
                ++i; // an escape: skip the next character
            else if (c == quote && (!triple || opens_triple))
                quote = 0, i += triple ? 2 : 0;
        } else if (c == '"' || c == '\'') {
            quote = c, triple = opens_triple, i += triple ? 2 : 0;
        } else if (c == '#') {
            comment = true;
        } else if ((c == '.' || c == '[' || c == '{') && ++level > kMaxTomlNesting) {
            throw UsageError("config file '" + path + "': line " + std::to_string(line) +
                             " nests keys or values deeper than " +
                             std::to_string(kMaxTomlNesting) +
                             " levels; keys are the flag names without dashes (see --help)");
        }
    }
}
} // namespace

void apply_config_file(CLI::App& cmd, const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw UsageError("config file '" + path + "' " +
                         (std::filesystem::exists(path, ec) ? "is not a file" : "does not exist") +
                         "; give --config a TOML file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw UsageError("config file '" + path + "' cannot be opened (" + std::strerror(errno) +
                         "); check its permissions");
    const std::string text = read_rest(in);
    if (in.bad()) throw UsageError("config file '" + path + "' could not be read to the end");
    apply_config_text(cmd, text, path);
}

void apply_config_text(CLI::App& cmd, std::string_view text, const std::string& path) {
    check_toml_nesting(text, path);
    toml::table table;
    try {
        table = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
        std::ostringstream where;
        where << e.source().begin;
        throw UsageError("config file '" + path + "' is not valid TOML (" +
                         std::string(e.description()) + " at " + where.str() + ")");
    }
    for (const auto& [k, v] : table) {
        const std::string key(k.str());
        CLI::Option* opt = nullptr;
        try {
            opt = cmd.get_option("--" + key);
        } catch (const CLI::OptionNotFound&) {
            throw UsageError("config file '" + path + "': unknown key '" + key +
                             "'; keys are the flag names without dashes (see --help)");
        }
        if (key == "config") // read once, before any of its keys: a second file would be lost
            throw UsageError("config file '" + path +
                             "': a config file cannot name another (key 'config'); merge the two "
                             "files, or give --config once");
        if (opt->count() > 0) continue; // given on the command line: the flag wins
        set_option_text(*opt, value_text(v, key, path), "config file '" + path + "'", key);
    }
}

std::set<std::string> command_line_flags(const CLI::App& cmd) {
    std::set<std::string> given;
    for (const CLI::Option* opt : cmd.get_options())
        if (opt->count() > 0 && !opt->get_lnames().empty())
            given.insert("--" + opt->get_lnames().front());
    return given;
}

void set_option_text(CLI::Option& opt, const std::string& text, const std::string& source,
                     const std::string& key) {
    try {
        opt.add_result(text);
        opt.run_callback();
    } catch (const CLI::Error& e) {
        throw UsageError(source + ": bad value for '" + key + "': " + e.what());
    }
}

} // namespace shardlab
