// libFuzzer harness for `--config` files (launch/config_file.cpp): any bytes are the TOML text,
// applied to `shardlab train`'s real flags as the command does after parsing its command line.
// A UsageError is the file refused with a message; a crash, a sanitizer report or any other
// exception (toml++'s, CLI11's, the standard library's) escaping is a bug.
#include "core/error.h"
#include "fuzz/train_command.h"
#include "launch/config_file.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace shardlab;

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
