// `shardlab train`'s command line for the fuzz harnesses of its config files: the real flags and
// validators, reset between inputs to the state a new process has after `shardlab train`.
#pragma once

#include "launch/train_options.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace shardlab {

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

} // namespace shardlab
