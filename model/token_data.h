// Training tokens from a data file: an llm.c token shard (uint16 GPT-2 tokens after a 1 KiB
// header) or, for any other file, its bytes, so a plain text file trains a byte-level model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

// Tokens of a data file: an llm.c token shard (detected by its magic number) or any other file
// read as bytes (V = 256).
struct TokenData {
    std::vector<std::uint16_t> tokens;
    bool byte_level = true; // false for llm.c shards
    std::string path;
    int max_token() const; // largest id present (-1 when empty)
};

// Throws UsageError naming the file and the fix when it is missing, empty or a malformed shard.
TokenData load_tokens(const std::string& path);

// The same from a file's bytes, `path` naming it in messages: what load_tokens does once it has
// read them, and what fuzz/fuzz_token_shard.cpp feeds bytes from memory.
TokenData parse_tokens(const std::vector<unsigned char>& bytes, const std::string& path);

} // namespace shardlab
