// Loading token data. llm.c shards are 256 little-endian int32 (magic 20240520, version 1,
// token count, unused) followed by `count` little-endian uint16 tokens; every other file is text
// whose bytes are the tokens.
#include "model/token_data.h"

#include "core/error.h"
#include "core/read_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace shardlab {

namespace {

constexpr std::int32_t kShardMagic = 20240520;
constexpr std::int32_t kShardVersion = 1;
constexpr std::size_t kShardHeaderBytes = 256 * 4;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
    throw UsageError("token file '" + path + "': " + problem);
}

std::vector<unsigned char> read_all(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) fail(path, "does not exist; check the path");
    if (std::filesystem::is_directory(path, ec))
        fail(path, "is a directory; give a text file or an llm.c token shard (train reads one "
                   "folder, its default corpus of license texts: leave --data out for it)");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, std::string("cannot open it (") + std::strerror(errno) + "); check permissions");
    std::vector<unsigned char> bytes = read_rest<std::vector<unsigned char>>(in);
    if (in.bad()) fail(path, "reading it failed; check that the file is readable");
    return bytes;
}

// Little-endian int32 i of the header; the caller ensures it lies inside `bytes`.
std::int32_t header_int(const std::vector<unsigned char>& bytes, std::size_t i) {
    std::uint32_t v = 0;
    for (int b = 3; b >= 0; --b) v = (v << 8) | bytes[4 * i + std::size_t(b)];
    return std::int32_t(v);
}

// A shard whose magic is damaged: version 1 and a token count that matches the file's size, as
// no text has by chance.
bool is_damaged_shard(const std::vector<unsigned char>& bytes) {
    if (bytes.size() < kShardHeaderBytes) return false;
    const std::int64_t count = header_int(bytes, 2);
    return header_int(bytes, 1) == kShardVersion && count >= 0 &&
           std::uint64_t(count) * 2 + kShardHeaderBytes == bytes.size();
}

bool is_shard(const std::vector<unsigned char>& bytes) {
    return bytes.size() >= 4 && header_int(bytes, 0) == kShardMagic;
}

std::vector<std::uint16_t> parse_shard(const std::string& path,
                                       const std::vector<unsigned char>& bytes) {
    if (bytes.size() < kShardHeaderBytes)
        fail(path, "is an llm.c shard of " + std::to_string(bytes.size()) +
                       " bytes, shorter than its 1024-byte header; the file is truncated — "
                       "regenerate or copy it again");
    const std::int32_t version = header_int(bytes, 1);
    if (version != kShardVersion)
        fail(path, "is an llm.c shard of version " + std::to_string(version) +
                       "; shardlab reads version 1 (uint16 tokens) — regenerate it with llm.c's "
                       "current data scripts");
    const std::int64_t count = header_int(bytes, 2);
    const std::size_t body = bytes.size() - kShardHeaderBytes;
    if (count < 0 || std::uint64_t(count) * 2 != body)
        fail(path, "llm.c shard header gives a token count of " + std::to_string(count) + " (" +
                       std::to_string(count * 2) + " bytes) but " + std::to_string(body) +
                       " bytes follow the 1024-byte header; the file is truncated or corrupt — "
                       "regenerate or copy it again");
    std::vector<std::uint16_t> tokens(static_cast<std::size_t>(count));
    const unsigned char* p = bytes.data() + kShardHeaderBytes;
    for (std::size_t i = 0; i < tokens.size(); ++i)
        tokens[i] = std::uint16_t(p[2 * i] | (p[2 * i + 1] << 8));
    return tokens;
}

} // namespace

int TokenData::max_token() const {
    if (tokens.empty()) return -1;
    return *std::max_element(tokens.begin(), tokens.end());
}

TokenData load_tokens(const std::string& path) {
    return parse_tokens(read_all(path), path);
}

TokenData parse_tokens(const std::vector<unsigned char>& bytes, const std::string& path) {
    if (bytes.empty()) fail(path, "is empty; give a text file or an llm.c token shard");
    TokenData data;
    data.path = path;
    if (is_shard(bytes)) {
        data.tokens = parse_shard(path, bytes);
        data.byte_level = false;
    } else if (is_damaged_shard(bytes)) {
        fail(path, "has an llm.c shard header (version 1, a token count that matches its size) "
                   "whose magic is " +
                       std::to_string(header_int(bytes, 0)) + ", not " +
                       std::to_string(kShardMagic) +
                       "; the shard is corrupt — regenerate or copy "
                       "it again");
    } else {
        data.tokens.assign(bytes.begin(), bytes.end());
    }
    return data;
}

} // namespace shardlab
