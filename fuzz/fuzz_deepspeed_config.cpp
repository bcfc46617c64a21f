// libFuzzer harness for `--deepspeed-config` files (launch/deepspeed_config.cpp): any bytes are the
// JSON text, mapped for 1 and for 3 ranks (the batch rule divides by the rank count) and applied
// to `shardlab train`'s real flags as the command does. A UsageError is the file refused with a
// message; a crash, a sanitizer report or any other exception (nlohmann::json's, CLI11's, the
// standard library's) escaping is a bug.
#include "core/error.h"
#include "fuzz/train_command.h"
#include "launch/deepspeed_config.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace shardlab;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static TrainCommand cmd;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (int ranks : {1, 3}) {
        cmd.reset();
        cmd.options.deepspeed_config = "fuzz.json";
        try {
            apply_deepspeed_text(*cmd.train, cmd.options, {}, ranks, text);
        } catch (const UsageError&) {
            // refused, with a message: what a bad file should get
        }
    }
    return 0;
}
