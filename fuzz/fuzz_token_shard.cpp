// libFuzzer harness for the token-file reader (model/token_data.cpp): any bytes are a data file,
// an llm.c shard or text. The reader may refuse them with a UsageError; a crash, a sanitizer
// report, any other exception, or tokens that do not match the bytes they came from is a bug.
#include "core/error.h"
#include "model/token_data.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace shardlab;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "accepted data file breaks an invariant: %s\n", what);
    std::abort();
}

// Text gives one token per byte; a shard one uint16 per two bytes after its 1024-byte header.
void check_accepted(const TokenData& d, const std::vector<unsigned char>& bytes) {
    if (d.byte_level) {
        if (d.tokens.size() != bytes.size()) fail("a text file's token count is not its size");
        for (std::size_t i = 0; i < bytes.size(); ++i)
            if (d.tokens[i] != bytes[i]) fail("a text token differs from its byte");
    } else if (d.tokens.size() * 2 + 1024 != bytes.size()) {
        fail("a shard's tokens and header do not add up to its size");
    }
    if (d.max_token() >= (d.byte_level ? 256 : 65536)) fail("a token is out of range");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<unsigned char> bytes(data, data + size);
    try {
        check_accepted(parse_tokens(bytes, "fuzz.bin"), bytes);
    } catch (const UsageError&) {
        // refused, with a message: what a bad file should get
    }
    return 0;
}
