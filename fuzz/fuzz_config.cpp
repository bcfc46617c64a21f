// libFuzzer harness for `--config` files (launch/config_file.cpp): any bytes are the TOML text,
// applied to `shardlab train`'s real flags as the command does after parsing its command line.
// A UsageError is the file refused with a message; a crash, a sanitizer report or any other
// exception (toml++'s, CLI11's, the standard library's) escaping is a bug.
#include "core/error.h"
#include "launch/config_file.h"
#include "launch/train_options.h"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace shardlab;

namespace {

// `train` as launch/main.cpp registers it. Built once: registering its ~45 flags costs far more
// than parsing a file, and App::clear() and fresh TrainOptions make each input start from the
// same state a new process would.
struct TrainCommand {
    CLI::App app;
    CLI::App* train = nullptr;
    TrainOptions options;

    TrainCommand() {
        app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        train = app.add_subcommand("train");
        add_train_options(*train, options);
    }

    // As after `shardlab train` with no flags: nothing given, every option at its default.
    void reset() {
        app.clear();
        options = TrainOptions{};
        std::vector<std::string> args{"train"};
        app.parse(args);
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static TrainCommand cmd;
    cmd.reset();
    try {
        apply_config_text(*cmd.train, std::string_view(reinterpret_cast<const char*>(data), size),
                          "fuzz.toml");
    } catch (const UsageError&) {
        // refused, with a message: what a bad file should get
    }
    return 0;
}
