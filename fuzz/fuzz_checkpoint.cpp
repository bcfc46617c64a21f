// libFuzzer harness for the checkpoint file reader (optim/checkpoint_file.cpp): any bytes are a
// rank-Q.bin. The reader may refuse them with an Error naming the file; a crash, a sanitizer
// report, any other exception, or an accepted file that does not encode back to the same bytes
// (a field read wrong, a range not checked) is a bug.
#include "core/error.h"
#include "optim/checkpoint_file.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace shardlab;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const CheckpointFile f = decode_checkpoint_file(bytes, "rank-0.bin");
        if (encode_checkpoint_file(f) != bytes) {
            std::fprintf(stderr, "an accepted checkpoint file does not encode back to its bytes\n");
            std::abort();
        }
    } catch (const Error&) {
        // refused, with a message: what a damaged file should get
    }
    return 0;
}
