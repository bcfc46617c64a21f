// libFuzzer harness for safetensors files: the reader (model/safetensors.cpp) and, on every file
// it accepts, the GPT-2 weights loader behind `--init` and `eval --weights` (model/weights_io.cpp).
// Any bytes are a file. Either may refuse it with a UsageError; a crash, a sanitizer report, any
// other exception, or a file accepted with tensors that do not fit its data section is a bug.
#include "core/dtype.h"
#include "core/error.h"
#include "model/safetensors.h"
#include "model/weights_io.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

using namespace shardlab;

namespace {

// What an accepted file must satisfy: every tensor holds numel * dtype_size bytes, and together
// they fill exactly what follows the header.
void check_accepted(const SafeTensorsFile& file, std::size_t size) {
    std::uint64_t data_bytes = 0;
    for (const SafeTensor& t : file.tensors) {
        if (t.data.size() != t.numel() * dtype_size(t.dtype)) {
            std::fprintf(stderr, "tensor '%s' holds %zu bytes, not numel * dtype_size\n",
                         t.name.c_str(), t.data.size());
            std::abort();
        }
        data_bytes += t.data.size();
    }
    if (data_bytes > size - 8) {
        std::fprintf(stderr, "tensors hold %llu bytes, more than the file's %zu\n",
                     static_cast<unsigned long long>(data_bytes), size);
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    try {
        const SafeTensorsFile file = read_safetensors(in, size, "fuzz.safetensors");
        check_accepted(file, size);
        weights_from_file(file, "fuzz.safetensors");
    } catch (const UsageError&) {
        // refused, with a message: what a bad file should get
    }
    return 0;
}
