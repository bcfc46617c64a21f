// safetensors reading and writing. The header is trusted for nothing: every offset, length and
// shape is checked against the file before a byte of tensor data is read, so a truncated or
// hand-edited checkpoint fails with a message instead of garbage weights.
#include "model/safetensors.h"

#include "core/error.h"
#include "core/file_target.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace shardlab {

namespace {

using json = nlohmann::json;

constexpr std::size_t kLengthBytes = 8; // the little-endian uint64 header length
// The format's own bound on the header (safetensors' MAX_HEADER_SIZE): a corrupt length field in
// a large file must not make the reader allocate and read gigabytes before any check.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

// Every reader error names the file first: a model may span many shards.
[[noreturn]] void fail_read(const std::string& path, const std::string& problem) {
    throw UsageError("safetensors file '" + path + "': " + problem);
}

[[noreturn]] void fail_write(const std::string& path, const std::string& problem) {
    throw Error("cannot write safetensors file '" + path + "': " + problem);
}

const char* st_dtype_name(DType t) {
    switch (t) {
    case DType::f32:
        return "F32";
    case DType::bf16:
        return "BF16";
    case DType::f16:
        return "F16";
    case DType::i64:
        return "I64";
    }
    return "?";
}

bool parse_st_dtype(const std::string& s, DType* out) {
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
        if (s == st_dtype_name(t)) {
            *out = t;
            return true;
        }
    }
    return false;
}

std::string shape_str(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// Bytes a tensor of this shape needs; false when that overflows 64 bits (a corrupt header).
bool checked_bytes(const std::vector<std::int64_t>& shape, DType t, std::uint64_t* bytes) {
    std::uint64_t n = dtype_size(t);
    for (std::int64_t d : shape) {
        if (__builtin_mul_overflow(n, std::uint64_t(d), &n)) return false;
    }
    *bytes = n;
    return true;
}

// ---- reading ------------------------------------------------------------------------------

// A tensor's header entry, validated against the file but with its data not yet read.
struct Entry {
    SafeTensor tensor;
    std::uint64_t begin = 0, end = 0; // relative to the start of the data section
};

std::string tensor_ref(const std::string& name) {
    return "tensor '" + name + "'";
}

DType parse_entry_dtype(const std::string& path, const std::string& name, const json& j) {
    DType t{};
    if (!j.is_string())
        fail_read(path, tensor_ref(name) + " has a non-string \"dtype\"; " +
                            "re-export the file with a standard safetensors writer");
    const std::string s = j.get<std::string>();
    if (!parse_st_dtype(s, &t))
        fail_read(path, tensor_ref(name) + " has dtype " + s +
                            "; shardlab reads F32, BF16 and F16 — convert the checkpoint first");
    return t;
}

std::vector<std::int64_t> parse_entry_shape(const std::string& path, const std::string& name,
                                            const json& j) {
    const std::string fix = "; a shape is a list of non-negative integers — re-export the file";
    if (!j.is_array())
        fail_read(path, tensor_ref(name) + " has a \"shape\" that is not a list" + fix);
    std::vector<std::int64_t> shape;
    for (const json& d : j) {
        if (!d.is_number_integer())
            fail_read(path, tensor_ref(name) + " has a non-integer dim " + d.dump() + fix);
        if (d.is_number_unsigned() &&
            d.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
            fail_read(path, tensor_ref(name) + " has a dim too large for int64" + fix);
        shape.push_back(d.get<std::int64_t>());
        if (shape.back() < 0)
            fail_read(path, tensor_ref(name) + " has negative dim " + std::to_string(shape.back()) +
                                " in shape " + j.dump() + fix);
    }
    return shape;
}

void parse_entry_offsets(const std::string& path, const std::string& name, const json& j,
                         Entry* e) {
    const bool ok = j.is_array() && j.size() == 2 && j[0].is_number_unsigned() &&
                    j[1].is_number_unsigned() &&
                    j[0].get<std::uint64_t>() <= j[1].get<std::uint64_t>();
    if (!ok)
        fail_read(path,
                  tensor_ref(name) + " has \"data_offsets\" " + j.dump() +
                      "; they must be [begin, end] with 0 <= begin <= end — re-export the file");
    e->begin = j[0].get<std::uint64_t>();
    e->end = j[1].get<std::uint64_t>();
}

// Checks the entry's byte range against its shape and against the data actually in the file.
void check_entry_range(const std::string& path, const Entry& e, std::uint64_t data_bytes) {
    const SafeTensor& t = e.tensor;
    const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    std::uint64_t need = 0;
    if (!checked_bytes(t.shape, t.dtype, &need))
        fail_read(path,
                  tensor_ref(t.name) + " has shape " + shape_str(t.shape) +
                      " whose size overflows 64 bits; the header is corrupt — re-export the file");
    if (e.end - e.begin != need)
        fail_read(path, tensor_ref(t.name) + " has data_offsets " + range + " (" +
                            std::to_string(e.end - e.begin) + " bytes) but shape " +
                            shape_str(t.shape) + " of " + st_dtype_name(t.dtype) + " needs " +
                            std::to_string(need) +
                            " bytes; the header is inconsistent — re-export the file");
    if (e.end > data_bytes)
        fail_read(path, tensor_ref(t.name) + " has data_offsets " + range +
                            " beyond the end of the data section (" + std::to_string(data_bytes) +
                            " bytes); the file is truncated — copy or download it again");
}

Entry parse_entry(const std::string& path, const std::string& name, const json& j,
                  std::uint64_t data_bytes) {
    if (!j.is_object())
        fail_read(path, tensor_ref(name) + " is not a JSON object; each tensor needs " +
                            "{\"dtype\", \"shape\", \"data_offsets\"} — re-export the file");
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
        if (!j.contains(key))
            fail_read(path, tensor_ref(name) + " has no \"" + key + "\"; every tensor entry " +
                                "needs dtype, shape and data_offsets — re-export the file");
    }
    Entry e;
    e.tensor.name = name;
    e.tensor.dtype = parse_entry_dtype(path, name, j["dtype"]);
    e.tensor.shape = parse_entry_shape(path, name, j["shape"]);
    parse_entry_offsets(path, name, j["data_offsets"], &e);
    check_entry_range(path, e, data_bytes);
    return e;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& j) {
    const std::string fix = "; __metadata__ maps strings to strings — re-export the file";
    if (!j.is_object()) fail_read(path, "\"__metadata__\" is not a JSON object" + fix);
    std::map<std::string, std::string> m;
    for (const auto& [key, value] : j.items()) {
        if (!value.is_string())
            fail_read(path, "metadata value for '" + key + "' is " + value.dump() + fix);
        m[key] = value.get<std::string>();
    }
    return m;
}

// Sorted by begin, the non-empty ranges must tile the data section exactly: each begins where the
// one before ended, the first at 0, the last at the section's end. A gap, an overlap or trailing
// bytes mean a corrupt header — a header length off by one shifts every offset and leaves one.
void sort_and_check_tiling(const std::string& path, std::vector<Entry>& entries,
                           std::uint64_t data_bytes) {
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    const Entry* prev = nullptr;
    for (const Entry& e : entries) {
        if (e.begin == e.end) continue;
        const std::uint64_t expected = prev ? prev->end : 0;
        if (e.begin < expected)
            fail_read(path, "tensors '" + prev->tensor.name + "' and '" + e.tensor.name +
                                "' overlap in the data section; the header is corrupt — " +
                                "re-export the file");
        if (e.begin > expected)
            fail_read(path, std::to_string(e.begin - expected) + " unused bytes lie before " +
                                tensor_ref(e.tensor.name) +
                                " in the data section; the header is corrupt — re-export the file");
        prev = &e;
    }
    const std::uint64_t used = prev ? prev->end : 0;
    if (used != data_bytes)
        fail_read(path, "the tensors end at byte " + std::to_string(used) +
                            " of a data section of " + std::to_string(data_bytes) +
                            " bytes; trailing bytes mean a corrupt header length or a file "
                            "with something appended — re-export or copy it again");
}

std::uint64_t read_le64(const unsigned char* b) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
    return v;
}

// A header nests three levels deep (the header, a tensor's entry, its shape). Deeper input is
// refused as it is parsed: dump(), which the messages quote values with, recurses once per level,
// and a few hundred KB of '[' would otherwise overflow the stack.
constexpr int kMaxHeaderDepth = 8;

json parse_header(const std::string& path, const std::string& text) {
    json h;
    const json::parser_callback_t limit_depth = [&](int depth, json::parse_event_t, json&) {
        if (depth > kMaxHeaderDepth)
            fail_read(path, "the header JSON nests deeper than " + std::to_string(kMaxHeaderDepth) +
                                " levels; the file is corrupt or not a safetensors file");
        return true;
    };
    try {
        h = json::parse(text, limit_depth);
    } catch (const json::exception& e) {
        fail_read(path, std::string("the header is not valid JSON (") + e.what() +
                            "); the file is corrupt or not a safetensors file");
    }
    if (!h.is_object())
        fail_read(path, "the header JSON is not an object; the file is not a safetensors file");
    return h;
}

void read_exact(std::istream& in, const std::string& path, std::uint64_t pos, void* dst,
                std::uint64_t n) {
    in.seekg(std::streamoff(pos));
    in.read(static_cast<char*>(dst), std::streamsize(n));
    if (!in || std::uint64_t(in.gcount()) != n)
        fail_read(path, "could not read " + std::to_string(n) + " bytes at offset " +
                            std::to_string(pos) + "; check that the file is not being modified");
}

} // namespace

std::size_t SafeTensor::numel() const {
    std::size_t n = 1;
    for (std::int64_t d : shape) n *= std::size_t(d);
    return n;
}

const SafeTensor* SafeTensorsFile::find(const std::string& name) const {
    for (const SafeTensor& t : tensors) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

namespace {
// Opens `path` and returns its size; the reader's messages for a missing or odd file.
std::uint64_t open_for_reading(std::ifstream& in, const std::string& path) {
    in.open(path, std::ios::binary);
    if (!in)
        fail_read(path,
                  std::string("cannot open it (") + std::strerror(errno) + "); check the path");
    std::error_code ec;
    const std::uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) fail_read(path, "cannot get its size (" + ec.message() + "); give a regular file");
    return size;
}
} // namespace

SafeTensorsFile read_safetensors(const std::string& path) {
    std::ifstream in;
    const std::uint64_t size = open_for_reading(in, path);
    return read_safetensors(in, size, path);
}

SafeTensorsFile read_safetensors_index(const std::string& path) {
    std::ifstream in;
    const std::uint64_t size = open_for_reading(in, path);
    return read_safetensors_index(in, size, path);
}

SafeTensorsFile read_safetensors(std::istream& in, std::uint64_t size, const std::string& path) {
    SafeTensorsFile file = read_safetensors_index(in, size, path);
    for (SafeTensor& t : file.tensors) {
        t.data.resize(t.numel() * dtype_size(t.dtype));
        if (!t.data.empty()) read_exact(in, path, t.file_offset, t.data.data(), t.data.size());
    }
    return file;
}

SafeTensorsFile read_safetensors_index(std::istream& in, std::uint64_t size,
                                       const std::string& path) {
    if (size < kLengthBytes)
        fail_read(path, "it is " + std::to_string(size) + " bytes, shorter than the 8-byte " +
                            "header length; it is not a safetensors file — check the path");
    unsigned char len[kLengthBytes];
    read_exact(in, path, 0, len, kLengthBytes);
    const std::uint64_t n = read_le64(len);
    if (n > size - kLengthBytes)
        fail_read(path, "header length " + std::to_string(n) + " is beyond the file size (" +
                            std::to_string(size) +
                            " bytes); the file is truncated or not safetensors");
    if (n > kMaxHeaderBytes)
        fail_read(path, "header length " + std::to_string(n) +
                            " is above the format's limit of 100 MB (100000000 bytes); the "
                            "length field is corrupt — copy or export the file again");
    std::string text(n, '\0');
    read_exact(in, path, kLengthBytes, text.data(), n);
    const json header = parse_header(path, text);

    const std::uint64_t data_start = kLengthBytes + n;
    SafeTensorsFile file;
    std::vector<Entry> entries;
    for (const auto& [key, value] : header.items()) {
        if (key == "__metadata__")
            file.metadata = parse_metadata(path, value);
        else
            entries.push_back(parse_entry(path, key, value, size - data_start));
    }
    sort_and_check_tiling(path, entries, size - data_start);
    for (Entry& e : entries) {
        e.tensor.file_offset = data_start + e.begin;
        file.tensors.push_back(std::move(e.tensor));
    }
    return file;
}

// ---- writing ------------------------------------------------------------------------------

namespace {

void check_tensor_for_write(const std::string& path, const SafeTensor& t) {
    if (t.name == "__metadata__")
        fail_write(path, "a tensor is named '__metadata__', which the format reserves; rename it");
    for (std::int64_t d : t.shape) {
        if (d < 0)
            fail_write(path, tensor_ref(t.name) + " has negative dim in shape " +
                                 shape_str(t.shape) + "; fix the shape");
    }
    std::uint64_t need = 0;
    if (!checked_bytes(t.shape, t.dtype, &need) || t.data.size() != need)
        fail_write(path, tensor_ref(t.name) + " holds " + std::to_string(t.data.size()) +
                             " bytes but shape " + shape_str(t.shape) + " of " +
                             st_dtype_name(t.dtype) + " needs " + std::to_string(need) +
                             "; fill data with numel * dtype_size bytes");
}

// The header JSON (tensors in the given order, contiguous), space-padded so the data section
// starts 8-byte aligned and readers can map it as arrays directly.
std::string build_header(const std::string& path, const SafeTensorsFile& file) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    if (!file.metadata.empty()) h["__metadata__"] = file.metadata;
    std::uint64_t offset = 0;
    for (const SafeTensor& t : file.tensors) {
        check_tensor_for_write(path, t);
        if (h.contains(t.name))
            fail_write(path, "two tensors are named '" + t.name + "'; give each a unique name");
        h[t.name] = {{"dtype", st_dtype_name(t.dtype)},
                     {"shape", t.shape},
                     {"data_offsets", {offset, offset + t.data.size()}}};
        offset += t.data.size();
    }
    std::string text;
    try {
        text = h.dump();
    } catch (const nlohmann::json::exception& e) {
        fail_write(path, std::string(e.what()) + "; names and metadata must be valid UTF-8");
    }
    text.append((kLengthBytes - text.size() % kLengthBytes) % kLengthBytes, ' ');
    return text;
}

void write_contents(std::ofstream& out, const std::string& header, const SafeTensorsFile& file) {
    char len[kLengthBytes];
    std::uint64_t n = header.size();
    for (std::size_t i = 0; i < kLengthBytes; ++i) len[i] = char((n >> (8 * i)) & 0xffu);
    out.write(len, kLengthBytes);
    out.write(header.data(), std::streamsize(header.size()));
    for (const SafeTensor& t : file.tensors) {
        out.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size()));
    }
}

// Without fsync the rename could reach the disk before the data, and a power cut would leave an
// empty file under the final name.
bool sync_to_disk(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return false;
    const bool ok = ::fsync(fd) == 0;
    return ::close(fd) == 0 && ok;
}

} // namespace

void write_safetensors(const std::string& path, const SafeTensorsFile& file) {
    const std::string header = build_header(path, file);
    const FileTarget target = file_target(path);
    const std::string tmp = target.temporary();
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
        fail_write(path, "cannot create '" + tmp + "' (" + std::strerror(errno) +
                             "); check that the directory exists and is writable");
    write_contents(out, header, file);
    out.close();
    std::error_code ec;
    if (target.in_place) {
        if (!out) fail_write(path, "writing it failed");
        return;
    }
    if (!out || !sync_to_disk(tmp)) {
        std::filesystem::remove(tmp, ec);
        fail_write(path, "writing '" + tmp + "' failed; check free disk space");
    }
    std::filesystem::rename(tmp, target.path, ec);
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        fail_write(path, "cannot rename '" + tmp + "' to it (" + ec.message() +
                             "); check permissions on the directory");
    }
}

} // namespace shardlab
