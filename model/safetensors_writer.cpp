// Header first, data at offsets, sync and rename.
#include "model/safetensors_writer.h"

#include "core/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace shardlab {

namespace {
const char* st_dtype(DType t) {
    return t == DType::f32 ? "F32" : t == DType::bf16 ? "BF16" : "F16";
}
} // namespace

SafeTensorsWriter::SafeTensorsWriter(std::string path,
                                     const std::map<std::string, std::string>& metadata,
                                     const std::vector<TensorEntry>& tensors)
    : path_(std::move(path)), target_(file_target(path_)), tmp_(target_.temporary()) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    if (!metadata.empty()) h["__metadata__"] = metadata;
    offsets_.push_back(0);
    for (const TensorEntry& t : tensors) {
        std::uint64_t numel = 1;
        for (std::int64_t d : t.shape) numel *= std::uint64_t(d);
        const std::uint64_t end = offsets_.back() + numel * dtype_size(t.dtype);
        h[t.name] = {{"dtype", st_dtype(t.dtype)},
                     {"shape", t.shape},
                     {"data_offsets", {offsets_.back(), end}}};
        offsets_.push_back(end);
    }
    std::string header = h.dump();
    header.append((8 - header.size() % 8) % 8, ' '); // the data section starts 8-aligned
    data_start_ = 8 + header.size();
    file_ = std::fopen(tmp_.c_str(), "wb");
    if (!file_) fail("create '" + tmp_ + "'", errno);
    if (target_.in_place && ::lseek(::fileno(file_), 0, SEEK_CUR) < 0) {
        abandon();
        throw Error("cannot write safetensors file '" + path_ +
                    "': it is a pipe, and the file is written at offsets; name a regular file "
                    "(and copy it from there)");
    }
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = (std::uint64_t(header.size()) >> (8 * i)) & 0xffu;
    if (std::fwrite(len, 1, 8, file_) != 8 ||
        std::fwrite(header.data(), 1, header.size(), file_) != header.size())
        fail("write '" + tmp_ + "'", errno);
}

SafeTensorsWriter::~SafeTensorsWriter() {
    abandon();
}

void SafeTensorsWriter::abandon() {
    if (!file_) return;
    std::fclose(file_);
    file_ = nullptr;
    discard_temporary();
}

void SafeTensorsWriter::discard_temporary() const {
    if (!target_.in_place) std::remove(tmp_.c_str()); // never the device written in place
}

void SafeTensorsWriter::write(std::uint64_t data_offset, const void* bytes, std::size_t n) {
    check(data_offset + n <= data_bytes(), "internal: safetensors write past the data section");
    if (std::fseek(file_, long(data_start_ + data_offset), SEEK_SET) != 0 ||
        std::fwrite(bytes, 1, n, file_) != n)
        fail("write '" + tmp_ + "'", errno);
    written_ += n;
}

void SafeTensorsWriter::finish() {
    // The data section must be complete: a gap (a slice never written reads as zeros) would be a
    // bug, which the count of bytes written catches; the temporary file goes with it.
    int err = 0;
    if (std::fflush(file_) != 0 || (!target_.in_place && ::fsync(::fileno(file_)) != 0))
        err = errno;
    const long size = target_.in_place                      ? long(data_start_ + written_)
                      : std::fseek(file_, 0, SEEK_END) == 0 ? std::ftell(file_)
                                                            : -1;
    if (std::fclose(file_) != 0 && !err) err = errno;
    file_ = nullptr;
    if (err) {
        discard_temporary();
        fail("write '" + tmp_ + "'", err);
    }
    if (std::uint64_t(size) != data_start_ + data_bytes() || written_ != data_bytes()) {
        discard_temporary();
        throw Error(fmt::format("internal: safetensors file '{}' was not written completely ({} "
                                "of {} data bytes)",
                                path_, written_, data_bytes()));
    }
    if (!target_.in_place && std::rename(tmp_.c_str(), target_.path.c_str()) != 0) {
        err = errno;
        discard_temporary();
        fail("rename '" + tmp_ + "' to it", err);
    }
}

void SafeTensorsWriter::fail(const std::string& what, int err) {
    abandon(); // a constructor that throws has no destructor to close the file
    throw Error("cannot write safetensors file '" + path_ + "': cannot " + what + ": " +
                write_failure(err, "check that the directory exists and is writable"));
}

} // namespace shardlab
