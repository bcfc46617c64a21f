// TensorView: a non-owning view — pointer, dtype, shape, device. Ownership stays with an
// Allocation (or a flat parameter buffer); views are cheap to pass and copy.
#pragma once

#include "core/device.h"
#include "core/dtype.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

struct TensorView {
    void* data = nullptr;
    DType dtype = DType::f32;
    std::vector<std::int64_t> shape;
    Device device = Device::cpu();

    std::size_t numel() const {
        std::size_t n = 1;
        for (auto d : shape) n *= std::size_t(d);
        return n;
    }
    std::size_t bytes() const { return numel() * dtype_size(dtype); }
    template <typename T>
    T* as() const {
        return static_cast<T*>(data);
    }
    std::string shape_string() const; // "[768, 2304]"
};

} // namespace shardlab
