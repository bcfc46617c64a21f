// A safetensors file written piece by piece, so a model never has to be whole in one process's
// memory: the header (names, dtypes, shapes, byte ranges in the order given) goes first, then the
// data arrives in any order at its offset; finish() syncs the temporary file and renames it into
// place, so a crash leaves the old file or the complete new one. `shardlab checkpoint export` and
// --save-weights stream through it unit by unit.
#pragma once

#include "core/file_target.h"

#include "core/dtype.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace shardlab {

struct TensorEntry {
    std::string name;
    DType dtype = DType::f32;
    std::vector<std::int64_t> shape;
};

class SafeTensorsWriter {
  public:
    // Throws Error naming the file when it cannot be created.
    SafeTensorsWriter(std::string path, const std::map<std::string, std::string>& metadata,
                      const std::vector<TensorEntry>& tensors);
    ~SafeTensorsWriter(); // without finish(): removes the temporary file
    SafeTensorsWriter(const SafeTensorsWriter&) = delete;
    SafeTensorsWriter& operator=(const SafeTensorsWriter&) = delete;

    // Where tensor i's bytes start in the data section, and how many there are.
    std::uint64_t offset(std::size_t i) const { return offsets_[i]; }
    std::uint64_t data_bytes() const { return offsets_.back(); }
    // Writes n bytes at `data_offset` of the data section (each byte once: finish() checks that
    // the writes add up to the whole section).
    void write(std::uint64_t data_offset, const void* bytes, std::size_t n);
    void finish();

  private:
    [[noreturn]] void fail(const std::string& what, int err);
    void abandon();                 // closes the file and removes the temporary
    void discard_temporary() const; // removes the temporary (not a device written in place)

    std::string path_;  // as named, for messages
    FileTarget target_; // what the rename replaces (core/file_target.h)
    std::string tmp_;
    std::FILE* file_ = nullptr;
    std::uint64_t data_start_ = 0, written_ = 0;
    std::vector<std::uint64_t> offsets_; // tensor i starts at offsets_[i]; the last is the end
};

} // namespace shardlab
