// Token data: text files give their bytes, hand-built llm.c shards give their uint16 tokens, and
// every malformed input fails with a message naming the file and the fix.
#include "model/token_data.h"
#include "model/token_windows.h"

#include "core/error.h"
#include "core/read_file.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <streambuf>
#include <string>
#include <vector>

using namespace shardlab;
namespace fs = std::filesystem;

namespace {

class TokenDataTest : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("shardlab_token_data_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

void write_raw(const std::string& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

void put_le(std::string& s, std::uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// An llm.c shard: 256 int32 header (magic, version, count, zeros) then the tokens.
std::string shard(std::int32_t version, std::int32_t count,
                  const std::vector<std::uint16_t>& toks) {
    std::string s;
    put_le(s, 20240520u, 4);
    put_le(s, static_cast<std::uint32_t>(version), 4);
    put_le(s, static_cast<std::uint32_t>(count), 4);
    s.append(253 * 4, '\0');
    for (std::uint16_t t : toks) put_le(s, t, 2);
    return s;
}

void expect_error(const std::string& p, const std::vector<std::string>& fragments) {
    try {
        load_tokens(p);
        ADD_FAILURE() << "expected an Error loading " << p;
    } catch (const Error& e) {
        const std::string msg = e.what();
        for (const std::string& f : fragments) {
            EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nmissing: " << f;
        }
    }
}

// A pipe's stream: hands out at most 1000 bytes a call and cannot say how many are left.
class PipeBuf : public std::streambuf {
  public:
    explicit PipeBuf(std::string bytes) : bytes_(std::move(bytes)) {}

  protected:
    int_type underflow() override {
        if (at_ == bytes_.size()) return traits_type::eof();
        const std::size_t n = std::min<std::size_t>(1000, bytes_.size() - at_);
        setg(&bytes_[at_], &bytes_[at_], &bytes_[at_] + n);
        at_ += n;
        return traits_type::to_int_type(*gptr());
    }

  private:
    std::string bytes_;
    std::size_t at_ = 0;
};

} // namespace

// Files are read from where the stream stands to the end in one read; a stream that cannot seek
// (a pipe: `--data <(zcat tokens.gz)`) grows by doubling. Every byte, nothing after.
TEST_F(TokenDataTest, ReadRestReadsFilesAndPipesToTheEnd) {
    std::string bytes(300000, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = char((i * 7919) >> 3);
    write_raw(path("f.bin"), bytes);
    std::ifstream file(path("f.bin"), std::ios::binary);
    file.seekg(5);
    EXPECT_EQ(read_rest(file), bytes.substr(5));
    EXPECT_FALSE(file.bad());
    for (const std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(65536), bytes.size()}) {
        PipeBuf pipe(bytes.substr(0, n));
        std::istream in(&pipe);
        const auto got = read_rest<std::vector<unsigned char>>(in);
        EXPECT_EQ(std::string(got.begin(), got.end()), bytes.substr(0, n)) << n << " bytes";
    }
}

TEST_F(TokenDataTest, TextFileGivesItsBytes) {
    const std::string text = std::string("hi\n\x00\xff", 5);
    write_raw(path("t.txt"), text);
    const TokenData d = load_tokens(path("t.txt"));
    EXPECT_TRUE(d.byte_level);
    EXPECT_EQ(d.path, path("t.txt"));
    EXPECT_EQ(d.tokens, (std::vector<std::uint16_t>{'h', 'i', '\n', 0, 255}));
    EXPECT_EQ(d.max_token(), 255);
}

TEST_F(TokenDataTest, FileShorterThanMagicIsText) {
    write_raw(path("s.txt"), "ab");
    const TokenData d = load_tokens(path("s.txt"));
    EXPECT_TRUE(d.byte_level);
    EXPECT_EQ(d.tokens, (std::vector<std::uint16_t>{'a', 'b'}));
    EXPECT_EQ(d.max_token(), 'b');
}

// The magic's bytes shifted by one are not the magic: still text.
TEST_F(TokenDataTest, OtherFirstIntIsText) {
    std::string s;
    put_le(s, 20240521u, 4);
    s.append(1020, 'x');
    write_raw(path("o.bin"), s);
    const TokenData d = load_tokens(path("o.bin"));
    EXPECT_TRUE(d.byte_level);
    EXPECT_EQ(d.tokens.size(), 1024u);
}

TEST_F(TokenDataTest, ReadsShard) {
    const std::vector<std::uint16_t> toks = {50256, 0, 1, 258, 65535, 7};
    write_raw(path("s.bin"), shard(1, 6, toks));
    const TokenData d = load_tokens(path("s.bin"));
    EXPECT_FALSE(d.byte_level);
    EXPECT_EQ(d.tokens, toks);
    EXPECT_EQ(d.max_token(), 65535);
}

// The parser on bytes in memory (what the fuzzer drives) gives what loading the file gives.
TEST_F(TokenDataTest, ParsesBytesInMemory) {
    const std::string s = shard(1, 3, {9, 8, 7});
    const TokenData d = parse_tokens(std::vector<unsigned char>(s.begin(), s.end()), "mem");
    EXPECT_FALSE(d.byte_level);
    EXPECT_EQ(d.tokens, (std::vector<std::uint16_t>{9, 8, 7}));
    EXPECT_EQ(d.path, "mem");
    EXPECT_THROW(parse_tokens({}, "mem"), UsageError);
}

TEST_F(TokenDataTest, EmptyShardHasNoTokens) {
    write_raw(path("e.bin"), shard(1, 0, {}));
    const TokenData d = load_tokens(path("e.bin"));
    EXPECT_FALSE(d.byte_level);
    EXPECT_TRUE(d.tokens.empty());
    EXPECT_EQ(d.max_token(), -1);
}

TEST_F(TokenDataTest, MaxTokenOfEmpty) {
    EXPECT_EQ(TokenData{}.max_token(), -1);
}

TEST_F(TokenDataTest, MissingFile) {
    expect_error(path("absent.bin"), {"absent.bin", "does not exist", "check the path"});
}

TEST_F(TokenDataTest, Directory) {
    expect_error(dir_.string(), {"is a directory"});
}

TEST_F(TokenDataTest, EmptyFile) {
    write_raw(path("empty.txt"), "");
    expect_error(path("empty.txt"),
                 {"empty.txt", "is empty; give a text file or an llm.c token shard"});
}

TEST_F(TokenDataTest, ShardWrongVersion) {
    write_raw(path("v.bin"), shard(2, 1, {5}));
    expect_error(path("v.bin"), {"v.bin", "version 2", "shardlab reads version 1"});
}

TEST_F(TokenDataTest, ShardShorterThanHeader) {
    std::string s;
    put_le(s, 20240520u, 4);
    put_le(s, 1u, 4);
    write_raw(path("h.bin"), s);
    expect_error(path("h.bin"), {"h.bin", "8 bytes", "shorter than its 1024-byte header"});
}

TEST_F(TokenDataTest, ShardCountDisagreesWithSize) {
    write_raw(path("c.bin"), shard(1, 12, {1, 2, 3}));
    expect_error(path("c.bin"), {"c.bin", "token count of 12 (24 bytes)", "but 6 bytes follow"});

    std::string odd = shard(1, 1, {9});
    odd.push_back('\0');
    write_raw(path("odd.bin"), odd);
    expect_error(path("odd.bin"), {"token count of 1 (2 bytes)", "but 3 bytes follow"});

    write_raw(path("neg.bin"), shard(1, -1, {}));
    expect_error(path("neg.bin"), {"token count of -1"});
}

// Every split of a global batch of 12 sequences into micro-batch B x accumulation A x ranks N
// reads, in each step s, windows 12s .. 12s + 11, each exactly once; and the window a rank reads
// as its b-th sequence of micro-batch a is ((s A + a) N + rank) B + b (issue 23, item 2).
TEST(StepWindows, EverySplitOfAGlobalBatchReadsTheSameWindowsOnce) {
    struct Split {
        int B, A, N;
    };
    for (const Split x :
         {Split{12, 1, 1}, Split{1, 12, 1}, Split{6, 1, 2}, Split{3, 2, 2}, Split{1, 3, 4},
          Split{2, 1, 6}, Split{1, 2, 6}, Split{4, 1, 3}, Split{2, 2, 3}}) {
        SCOPED_TRACE(testing::Message() << "B " << x.B << " A " << x.A << " N " << x.N);
        for (int step = 0; step < 3; ++step) {
            std::map<std::size_t, int> seen;
            for (int rank = 0; rank < x.N; ++rank)
                for (int a = 0; a < x.A; ++a)
                    for (int b = 0; b < x.B; ++b)
                        ++seen[shardlab::first_window(step, a, rank, x.N, x.A, x.B) + b];
            ASSERT_EQ(seen.size(), 12u);
            EXPECT_EQ(seen.begin()->first, std::size_t(12 * step));
            EXPECT_EQ(seen.rbegin()->first, std::size_t(12 * step + 11));
            for (const auto& [window, times] : seen) EXPECT_EQ(times, 1) << "window " << window;
        }
    }
    // Step 2, micro-batch 1 of 2, rank 1 of 3, 2 sequences each: ((2 2 + 1) 3 + 1) 2 = 32.
    EXPECT_EQ(shardlab::first_window(2, 1, 1, 3, 2, 2), 32u);
}

// Windows of T + 1 = 3 tokens over 10 tokens: three whole windows, the tenth token dropped; a
// window's inputs are its first T tokens and its targets its last T. Requests past the end are
// refused however large `first` is (no sum may wrap round to a window that exists).
TEST(TokenWindows, FillsWholeWindowsAndRefusesRequestsPastTheEnd) {
    const std::vector<std::uint16_t> tokens = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const TokenWindows w(tokens, 2);
    EXPECT_EQ(w.count(), 3u);
    EXPECT_TRUE(w.holds(0, 3));
    EXPECT_TRUE(w.holds(1, 2));
    EXPECT_TRUE(w.holds(3, 0));
    EXPECT_FALSE(w.holds(1, 3));
    EXPECT_FALSE(w.holds(4, 0));
    EXPECT_FALSE(w.holds(0, -1));
    EXPECT_FALSE(w.holds(SIZE_MAX, 1));
    EXPECT_FALSE(w.holds(SIZE_MAX - 1, 3)); // first + batch wraps to 1

    std::vector<std::uint16_t> in(4), tg(4);
    w.fill(1, 2, in.data(), tg.data());
    EXPECT_EQ(in, (std::vector<std::uint16_t>{3, 4, 6, 7}));
    EXPECT_EQ(tg, (std::vector<std::uint16_t>{4, 5, 7, 8}));
    EXPECT_THROW(w.fill(SIZE_MAX, 1, in.data(), tg.data()), Error);
    w.fill_wrapped(2, 2, in.data(), tg.data()); // windows 2, then 0
    EXPECT_EQ(in, (std::vector<std::uint16_t>{6, 7, 0, 1}));
    EXPECT_EQ(tg, (std::vector<std::uint16_t>{7, 8, 1, 2}));
}
