// `shardlab train`: registers the flags; the run itself is launch/trainer.cpp.
#include "launch/commands.h"
#include "launch/config_file.h"
#include "launch/trainer.h"

#include <memory>

namespace shardlab {

CommandRunner add_train_command(CLI::App& cmd) {
    auto o = std::make_shared<TrainOptions>();
    add_train_options(cmd, *o);
    return [o, &cmd] {
        if (!o->config_file.empty()) apply_config_file(cmd, o->config_file);
        return run_training(*o);
    };
}

} // namespace shardlab
