// safetensors: round trips of every dtype (0-d and empty tensors included), the on-disk layout
// checked byte by byte, a file built by hand from the format description, and one test per
// malformed-file error so each message keeps naming the problem.
#include "model/safetensors.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/read_file.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace shardlab;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test, removed afterwards; named by pid and test so parallel runs of
// the suite never share files.
class SafeTensorsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("shardlab_safetensors_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

std::vector<unsigned char> f32_bytes(const std::vector<float>& v) {
    std::vector<unsigned char> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

std::vector<unsigned char> u16_bytes(const std::vector<std::uint16_t>& v) {
    std::vector<unsigned char> b;
    for (std::uint16_t x : v) {
        b.push_back(static_cast<unsigned char>(x & 0xff));
        b.push_back(static_cast<unsigned char>(x >> 8));
    }
    return b;
}

SafeTensor make(const std::string& name, DType t, std::vector<std::int64_t> shape,
                std::vector<unsigned char> data) {
    SafeTensor s;
    s.name = name;
    s.dtype = t;
    s.shape = std::move(shape);
    s.data = std::move(data);
    return s;
}

std::string read_file(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return read_rest(in);
}

void write_raw(const std::string& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string le64(std::uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
}

// A file in the documented layout: length, header text, data.
std::string raw_file(const std::string& header, const std::string& data) {
    return le64(header.size()) + header + data;
}

std::uint64_t header_len(const std::string& bytes) {
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    return n;
}

// Expects read_safetensors(p) to throw Error whose message contains every fragment.
void expect_read_error(const std::string& p, const std::vector<std::string>& fragments) {
    try {
        read_safetensors(p);
        ADD_FAILURE() << "expected an Error reading " << p;
    } catch (const Error& e) {
        const std::string msg = e.what();
        for (const std::string& f : fragments) {
            EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nmissing: " << f;
        }
    }
}

void expect_write_error(const std::string& p, const SafeTensorsFile& f, const std::string& frag) {
    try {
        write_safetensors(p, f);
        ADD_FAILURE() << "expected an Error writing " << p;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
    }
}

SafeTensorsFile sample() {
    SafeTensorsFile f;
    f.tensors.push_back(make("w.f32", DType::f32, {2, 3}, f32_bytes({1, -2, 3.5f, 0, 1e-3f, -7})));
    f.tensors.push_back(make("w.bf16", DType::bf16, {4},
                             u16_bytes({f32_to_bf16(1), f32_to_bf16(-0.5f), 0x7f80, 0x0001})));
    f.tensors.push_back(make("w.f16", DType::f16, {2, 1, 2},
                             u16_bytes({f32_to_f16(2), f32_to_f16(-3), 0x7c00, 0x0001})));
    f.tensors.push_back(make("scalar", DType::f32, {}, f32_bytes({42.0f})));
    f.tensors.push_back(make("empty", DType::bf16, {0}, {}));
    f.tensors.push_back(make("empty2d", DType::f16, {3, 0}, {}));
    return f;
}

} // namespace

// ---- round trips and layout -----------------------------------------------------------------

TEST_F(SafeTensorsTest, RoundTripsEveryDtypeInOrder) {
    const SafeTensorsFile in = sample();
    write_safetensors(path("a.safetensors"), in);
    const SafeTensorsFile out = read_safetensors(path("a.safetensors"));
    ASSERT_EQ(out.tensors.size(), in.tensors.size());
    for (std::size_t i = 0; i < in.tensors.size(); ++i) {
        const SafeTensor& a = in.tensors[i];
        const SafeTensor& b = out.tensors[i];
        EXPECT_EQ(b.name, a.name);
        EXPECT_EQ(b.dtype, a.dtype) << a.name;
        EXPECT_EQ(b.shape, a.shape) << a.name;
        EXPECT_EQ(b.data, a.data) << a.name;
        EXPECT_EQ(b.numel(), a.numel()) << a.name;
    }
    EXPECT_TRUE(out.metadata.empty());
    EXPECT_FALSE(fs::exists(path("a.safetensors.tmp")));
}

TEST_F(SafeTensorsTest, NumelOfScalarAndEmptyShapes) {
    EXPECT_EQ(make("s", DType::f32, {}, {}).numel(), 1u);
    EXPECT_EQ(make("e", DType::f32, {0}, {}).numel(), 0u);
    EXPECT_EQ(make("e", DType::f32, {5, 0, 3}, {}).numel(), 0u);
    EXPECT_EQ(make("m", DType::f32, {2, 3, 4}, {}).numel(), 24u);
}

TEST_F(SafeTensorsTest, FindByName) {
    write_safetensors(path("a.safetensors"), sample());
    const SafeTensorsFile f = read_safetensors(path("a.safetensors"));
    const SafeTensor* t = f.find("scalar");
    ASSERT_NE(t, nullptr);
    EXPECT_FLOAT_EQ(load_as_f32(t->data.data(), t->dtype, 0), 42.0f);
    EXPECT_EQ(f.find("nope"), nullptr);
}

TEST_F(SafeTensorsTest, MetadataRoundTrips) {
    SafeTensorsFile in = sample();
    in.metadata = {{"format", "pt"}, {"step", "1200"}, {"note", "ünïcode \"quoted\""}, {"", ""}};
    write_safetensors(path("m.safetensors"), in);
    EXPECT_EQ(read_safetensors(path("m.safetensors")).metadata, in.metadata);
}

TEST_F(SafeTensorsTest, MetadataOnlyFileRoundTrips) {
    SafeTensorsFile in;
    in.metadata = {{"k", "v"}};
    write_safetensors(path("m.safetensors"), in);
    const SafeTensorsFile out = read_safetensors(path("m.safetensors"));
    EXPECT_EQ(out.metadata, in.metadata);
    EXPECT_TRUE(out.tensors.empty());
}

TEST_F(SafeTensorsTest, HeaderIsSpacePaddedToEightBytes) {
    // Names of every length mod 8 shift the JSON length through all residues.
    for (int len = 1; len <= 9; ++len) {
        SafeTensorsFile f;
        f.tensors.push_back(make(std::string(len, 'x'), DType::f16, {1}, u16_bytes({0x3c00})));
        write_safetensors(path("p.safetensors"), f);
        const std::string bytes = read_file(path("p.safetensors"));
        const std::uint64_t n = header_len(bytes);
        EXPECT_EQ((8 + n) % 8, 0u) << "name length " << len;
        ASSERT_EQ(bytes.size(), 8 + n + 2);
        const std::string header = bytes.substr(8, n);
        const std::size_t close = header.rfind('}');
        ASSERT_NE(close, std::string::npos);
        EXPECT_LT(header.size() - close - 1, 8u);
        EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos);
        EXPECT_EQ(static_cast<unsigned char>(bytes[8 + n]), 0x00);
        EXPECT_EQ(static_cast<unsigned char>(bytes[8 + n + 1]), 0x3c);
    }
}

// What we write, parsed by hand as another implementation would: dtype names, shapes and
// contiguous data offsets in the given order.
TEST_F(SafeTensorsTest, WrittenBytesFollowTheFormat) {
    const SafeTensorsFile in = sample();
    write_safetensors(path("a.safetensors"), in);
    const std::string bytes = read_file(path("a.safetensors"));
    const std::uint64_t n = header_len(bytes);
    const nlohmann::json h = nlohmann::json::parse(bytes.substr(8, n));
    EXPECT_FALSE(h.contains("__metadata__"));
    EXPECT_EQ(h["w.f32"]["dtype"], "F32");
    EXPECT_EQ(h["w.bf16"]["dtype"], "BF16");
    EXPECT_EQ(h["w.f16"]["dtype"], "F16");
    EXPECT_EQ(h["scalar"]["shape"], nlohmann::json::array());
    EXPECT_EQ(h["empty"]["shape"], nlohmann::json({0}));
    std::uint64_t offset = 0;
    for (const SafeTensor& t : in.tensors) {
        const auto& off = h[t.name]["data_offsets"];
        EXPECT_EQ(off[0].get<std::uint64_t>(), offset) << t.name;
        EXPECT_EQ(off[1].get<std::uint64_t>(), offset + t.data.size()) << t.name;
        EXPECT_EQ(h[t.name]["shape"].get<std::vector<std::int64_t>>(), t.shape);
        const std::string data = bytes.substr(8 + n + offset, t.data.size());
        EXPECT_EQ(std::vector<unsigned char>(data.begin(), data.end()), t.data) << t.name;
        offset += t.data.size();
    }
    EXPECT_EQ(bytes.size(), 8 + n + offset);
}

// A file written from the format description alone, tensors listed out of data order, unpadded
// header: the reader must accept it and return the tensors sorted by offset.
TEST_F(SafeTensorsTest, ReadsHandBuiltFile) {
    const std::string header = R"({"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},)"
                               R"("__metadata__":{"format":"pt"},)"
                               R"("a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},)"
                               R"("c":{"dtype":"F16","shape":[],"data_offsets":[12,14]}})";
    std::string data;
    data += std::string("\x00\x00\x80\x3f", 4); // 1.0f
    data += std::string("\x00\x00\x20\xc0", 4); // -2.5f
    data += std::string("\x40\x40\x80\xbf", 4); // bf16 3.0, -1.0
    data += std::string("\x00\x3c", 2);         // fp16 1.0
    write_raw(path("h.safetensors"), raw_file(header, data));

    const SafeTensorsFile f = read_safetensors(path("h.safetensors"));
    EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
    ASSERT_EQ(f.tensors.size(), 3u);
    EXPECT_EQ(f.tensors[0].name, "a");
    EXPECT_EQ(f.tensors[1].name, "b");
    EXPECT_EQ(f.tensors[2].name, "c");
    const SafeTensor& a = f.tensors[0];
    EXPECT_EQ(a.dtype, DType::f32);
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 1}));
    EXPECT_EQ(load_as_f32(a.data.data(), a.dtype, 0), 1.0f);
    EXPECT_EQ(load_as_f32(a.data.data(), a.dtype, 1), -2.5f);
    const SafeTensor& b = f.tensors[1];
    EXPECT_EQ(b.dtype, DType::bf16);
    EXPECT_EQ(load_as_f32(b.data.data(), b.dtype, 0), 3.0f);
    EXPECT_EQ(load_as_f32(b.data.data(), b.dtype, 1), -1.0f);
    const SafeTensor& c = f.tensors[2];
    EXPECT_EQ(c.dtype, DType::f16);
    EXPECT_TRUE(c.shape.empty());
    EXPECT_EQ(c.numel(), 1u);
    EXPECT_EQ(load_as_f32(c.data.data(), c.dtype, 0), 1.0f);
}

TEST_F(SafeTensorsTest, OverwritesAnExistingFile) {
    write_safetensors(path("a.safetensors"), sample());
    SafeTensorsFile small;
    small.tensors.push_back(make("only", DType::f32, {1}, f32_bytes({5})));
    write_safetensors(path("a.safetensors"), small);
    const SafeTensorsFile out = read_safetensors(path("a.safetensors"));
    ASSERT_EQ(out.tensors.size(), 1u);
    EXPECT_EQ(out.tensors[0].name, "only");
    EXPECT_FALSE(fs::exists(path("a.safetensors.tmp")));
}

// ---- reader errors --------------------------------------------------------------------------

TEST_F(SafeTensorsTest, MissingFile) {
    expect_read_error(path("absent.safetensors"),
                      {"absent.safetensors", "cannot open", "check the path"});
}

TEST_F(SafeTensorsTest, ShorterThanLengthField) {
    write_raw(path("s.safetensors"), "abc");
    expect_read_error(path("s.safetensors"),
                      {"s.safetensors", "3 bytes", "shorter than the 8-byte"});
}

TEST_F(SafeTensorsTest, HeaderLengthBeyondFile) {
    write_raw(path("l.safetensors"), le64(1000) + "{}");
    expect_read_error(path("l.safetensors"),
                      {"l.safetensors", "header length 1000", "beyond the file size (10 bytes)"});
}

TEST_F(SafeTensorsTest, HeaderLengthAboveTheFormatsLimit) {
    // A 300 MB sparse file whose length field says 200 MB: refused before a byte is allocated.
    write_raw(path("h.safetensors"), le64(200'000'000) + "{}");
    fs::resize_file(path("h.safetensors"), 300'000'000);
    expect_read_error(path("h.safetensors"),
                      {"h.safetensors", "header length 200000000 is above the format's limit",
                       "copy or export the file again"});
}

TEST_F(SafeTensorsTest, InvalidJson) {
    write_raw(path("j.safetensors"), raw_file("{\"a\": ", ""));
    expect_read_error(path("j.safetensors"), {"j.safetensors", "not valid JSON"});
}

TEST_F(SafeTensorsTest, HeaderNotAnObject) {
    write_raw(path("j.safetensors"), raw_file("[1, 2]", ""));
    expect_read_error(path("j.safetensors"), {"header JSON is not an object"});
}

TEST_F(SafeTensorsTest, EntryNotAnObject) {
    write_raw(path("e.safetensors"), raw_file(R"({"x": 3})", ""));
    expect_read_error(path("e.safetensors"), {"tensor 'x' is not a JSON object"});
}

TEST_F(SafeTensorsTest, EntryMissingFields) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"x":{"shape":[1],"data_offsets":[0,4]}})", "tensor 'x' has no \"dtype\""},
        {R"({"x":{"dtype":"F32","data_offsets":[0,4]}})", "tensor 'x' has no \"shape\""},
        {R"({"x":{"dtype":"F32","shape":[1]}})", "tensor 'x' has no \"data_offsets\""},
    };
    for (const auto& [header, fragment] : cases) {
        write_raw(path("f.safetensors"), raw_file(header, std::string(4, '\0')));
        expect_read_error(path("f.safetensors"), {"f.safetensors", fragment});
    }
}

TEST_F(SafeTensorsTest, UnsupportedDtype) {
    write_raw(path("d.safetensors"),
              raw_file(R"({"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                       std::string(8, '\0')));
    expect_read_error(path("d.safetensors"),
                      {"tensor 'x' has dtype I64; shardlab reads F32, BF16 and F16"});
}

TEST_F(SafeTensorsTest, MalformedShapeAndOffsets) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,4]}})", "negative dim -2"},
        {R"({"x":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "non-integer dim 1.5"},
        {R"({"x":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})", "not a list"},
        {R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "0 <= begin <= end"},
        {R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", "0 <= begin <= end"},
        {R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "0 <= begin <= end"},
        {R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})",
         "overflows"},
    };
    for (const auto& [header, fragment] : cases) {
        write_raw(path("s.safetensors"), raw_file(header, std::string(4, '\0')));
        expect_read_error(path("s.safetensors"), {"tensor 'x'", fragment});
    }
}

TEST_F(SafeTensorsTest, OffsetsDisagreeWithShape) {
    write_raw(path("o.safetensors"),
              raw_file(R"({"x":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})",
                       std::string(8, '\0')));
    expect_read_error(path("o.safetensors"),
                      {"tensor 'x' has data_offsets [0, 8] (8 bytes)", "BF16 needs 6 bytes"});
}

TEST_F(SafeTensorsTest, OffsetsBeyondFile) {
    write_raw(path("b.safetensors"),
              raw_file(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
                       std::string(12, '\0')));
    expect_read_error(path("b.safetensors"),
                      {"tensor 'x'", "beyond the end of the data section (12 bytes)", "truncated"});
}

TEST_F(SafeTensorsTest, OverlappingTensors) {
    write_raw(path("v.safetensors"),
              raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                       std::string(12, '\0')));
    expect_read_error(path("v.safetensors"), {"tensors 'x' and 'y' overlap"});
}

// The tensors must tile the data section: no unused bytes between them, at its start or end.
TEST_F(SafeTensorsTest, GapsAndTrailingBytesAreRefused) {
    write_raw(path("g.safetensors"),
              raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                       std::string(12, '\0')));
    expect_read_error(path("g.safetensors"), {"4 unused bytes lie before tensor 'y'"});
    write_raw(path("s.safetensors"),
              raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       std::string(8, '\0')));
    expect_read_error(path("s.safetensors"), {"4 unused bytes lie before tensor 'x'"});
    write_raw(path("t.safetensors"),
              raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                       std::string(5, '\0')));
    expect_read_error(path("t.safetensors"), {"the tensors end at byte 4 of a data section of 5"});
}

TEST_F(SafeTensorsTest, EmptyTensorInsideAnotherIsNoOverlap) {
    write_raw(path("z.safetensors"),
              raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                       std::string(8, '\0')));
    const SafeTensorsFile f = read_safetensors(path("z.safetensors"));
    ASSERT_EQ(f.tensors.size(), 2u);
    EXPECT_EQ(f.tensors[0].name, "x");
    EXPECT_EQ(f.tensors[1].name, "e");
}

TEST_F(SafeTensorsTest, BadMetadata) {
    write_raw(path("m.safetensors"), raw_file(R"({"__metadata__":{"step":12}})", ""));
    expect_read_error(path("m.safetensors"),
                      {"metadata value for 'step' is 12", "strings to strings"});
    write_raw(path("m.safetensors"), raw_file(R"({"__metadata__":[1]})", ""));
    expect_read_error(path("m.safetensors"), {"\"__metadata__\" is not a JSON object"});
}

// Found writing fuzz/fuzz_safetensors.cpp: a 200 KB header of nested lists crashed the reader
// (the message quoting the value recursed once per level, past the end of the stack).
TEST_F(SafeTensorsTest, DeeplyNestedHeaderIsRefused) {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    write_raw(
        path("n.safetensors"),
        raw_file(R"({"x":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,0]}})", ""));
    expect_read_error(path("n.safetensors"), {"the header JSON nests deeper than 8 levels"});
    write_raw(path("n.safetensors"), raw_file(R"({"__metadata__":{"a":)" + deep + "}}", ""));
    EXPECT_THROW(read_safetensors(path("n.safetensors")), UsageError);
}

TEST_F(SafeTensorsTest, ReadsFromAStream) {
    SafeTensorsFile f;
    f.metadata["k"] = "v";
    f.tensors.push_back(make("a", DType::f32, {2}, f32_bytes({1.5f, -2.0f})));
    write_safetensors(path("s.safetensors"), f);
    const std::string bytes = read_file(path("s.safetensors"));
    std::istringstream in(bytes);
    const SafeTensorsFile got = read_safetensors(in, bytes.size(), "in memory");
    EXPECT_EQ(got.metadata, f.metadata);
    ASSERT_EQ(got.tensors.size(), 1u);
    EXPECT_EQ(got.tensors[0].data, f.tensors[0].data);
    std::istringstream cut(bytes.substr(0, bytes.size() - 1));
    try {
        read_safetensors(cut, bytes.size() - 1, "in memory");
        ADD_FAILURE() << "a truncated stream must not read";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("'in memory'"), std::string::npos) << e.what();
    }
}

// ---- writer errors --------------------------------------------------------------------------

TEST_F(SafeTensorsTest, WriteRejectsInconsistentTensors) {
    SafeTensorsFile wrong_size;
    wrong_size.tensors.push_back(make("x", DType::bf16, {3}, std::vector<unsigned char>(4)));
    expect_write_error(path("w.safetensors"), wrong_size,
                       "tensor 'x' holds 4 bytes but shape [3] of BF16 needs 6");

    SafeTensorsFile negative;
    negative.tensors.push_back(make("x", DType::f32, {-1}, {}));
    expect_write_error(path("w.safetensors"), negative, "negative dim");

    SafeTensorsFile dup;
    dup.tensors.push_back(make("x", DType::f32, {}, f32_bytes({1})));
    dup.tensors.push_back(make("x", DType::f32, {}, f32_bytes({2})));
    expect_write_error(path("w.safetensors"), dup, "two tensors are named 'x'");

    SafeTensorsFile reserved;
    reserved.tensors.push_back(make("__metadata__", DType::f32, {}, f32_bytes({1})));
    expect_write_error(path("w.safetensors"), reserved, "reserves");

    EXPECT_FALSE(fs::exists(path("w.safetensors")));
    EXPECT_FALSE(fs::exists(path("w.safetensors.tmp")));
}

TEST_F(SafeTensorsTest, WriteIntoMissingDirectory) {
    expect_write_error(path("no/such/dir/w.safetensors"), sample(), "directory exists");
}
