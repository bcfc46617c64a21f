// Hugging Face safetensors files: an 8-byte little-endian header length N, N bytes of JSON naming
// each tensor's dtype, shape and byte range, then the raw little-endian tensor data. Lets shardlab
// load real checkpoints and save its own in a format every other framework reads.
#pragma once

#include "core/dtype.h"

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace shardlab {

struct SafeTensor {
    std::string name;
    DType dtype;                     // f32, bf16 or f16 (safetensors "F32", "BF16", "F16")
    std::vector<std::int64_t> shape; // [] is a 0-d scalar (1 element); any 0 dim means no elements
    std::vector<unsigned char> data; // raw little-endian bytes, numel * dtype_size
    std::uint64_t file_offset = 0;   // where those bytes start in the file it was read from
    std::size_t numel() const;
};

struct SafeTensorsFile {
    std::map<std::string, std::string> metadata; // the "__metadata__" object (string -> string)
    std::vector<SafeTensor> tensors;             // in file order (sorted by data offset when read)
    const SafeTensor* find(const std::string& name) const; // nullptr when absent
};

// Reads the whole file; throws UsageError naming the file and what is wrong with it.
SafeTensorsFile read_safetensors(const std::string& path);

// The same from the `size` bytes of a stream, `path` naming it in messages: the reader itself,
// which the path version calls and fuzz/fuzz_safetensors.cpp feeds bytes from memory.
SafeTensorsFile read_safetensors(std::istream& in, std::uint64_t size, const std::string& path);

// The header alone, checked exactly as read_safetensors checks it (entries, tiling, the file's
// size): every tensor with its file_offset and no data, for readers that fetch only the ranges
// they need (model/weights_io.h's WeightsReader).
SafeTensorsFile read_safetensors_index(const std::string& path);
SafeTensorsFile read_safetensors_index(std::istream& in, std::uint64_t size,
                                       const std::string& path);

// Writes `path + ".tmp"`, flushes it to disk, then renames it over `path`, so a crash leaves
// either the old file or the complete new one. Throws Error on inconsistent tensors or I/O failure.
void write_safetensors(const std::string& path, const SafeTensorsFile& file);

} // namespace shardlab
