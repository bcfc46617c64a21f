// Tensor: the currency between layers — a pointer, a dtype, a shape (up to 4 dimensions) and the
// device the memory is on. A view: ownership stays with an Allocation (or a flat parameter
// buffer), so tensors are cheap to pass and copy. Dense, row-major.
#pragma once

#include "core/device.h"
#include "core/dtype.h"
#include "core/stream.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace shardlab {

struct Shape {
    std::array<std::int64_t, 4> dims{};
    int rank = 0;

    Shape() = default;
    Shape(std::initializer_list<std::int64_t> d); // at most 4 dimensions
    std::int64_t operator[](int i) const { return dims[std::size_t(i)]; }
    std::size_t numel() const;
    bool operator==(const Shape& o) const { return rank == o.rank && dims == o.dims; }
};

struct Tensor {
    void* data = nullptr;
    DType dtype = DType::f32;
    Shape shape;
    Device device = Device::cpu();

    std::size_t numel() const { return shape.numel(); }
    std::size_t bytes() const { return numel() * dtype_size(dtype); }
    std::int64_t dim(int i) const { return shape[i]; }
    template <typename T>
    T* as() const {
        return static_cast<T*>(data);
    }
    // The tensor of `shape` starting `offset` elements into this one's memory.
    Tensor view(std::size_t offset, Shape shape) const;
    std::string shape_string() const; // "[768, 2304]"
};

// Host copies, in stream order: the host waits for the stream to pass the copy.
std::vector<float> to_host_f32(Stream& s, const Tensor& t);
// Rounds fp32 values to t's dtype on the host, then uploads them (the host may reuse `values`).
void upload_f32(Stream& s, const Tensor& t, const float* values);

} // namespace shardlab
