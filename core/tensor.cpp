// Shapes, views and host round trips.
#include "core/tensor.h"

#include "core/error.h"

#include <memory>

namespace shardlab {

Shape::Shape(std::initializer_list<std::int64_t> d) {
    check(d.size() <= dims.size(), "internal: a tensor has at most 4 dimensions");
    for (std::int64_t x : d) dims[std::size_t(rank++)] = x;
}

std::size_t Shape::numel() const {
    std::size_t n = 1;
    for (int i = 0; i < rank; ++i) n *= std::size_t(dims[std::size_t(i)]);
    return n;
}

Tensor Tensor::view(std::size_t offset, Shape s) const {
    return {static_cast<char*>(data) + offset * dtype_size(dtype), dtype, s, device};
}

std::string Tensor::shape_string() const {
    std::string s = "[";
    for (int i = 0; i < shape.rank; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::vector<float> to_host_f32(Stream& s, const Tensor& t) {
    std::vector<float> out(t.numel());
    if (t.dtype == DType::f32) { // straight into the result: no raw copy is staged
        s.memcpy(out.data(), t.data, t.bytes());
        s.synchronize();
        return out;
    }
    const auto raw = std::make_unique_for_overwrite<char[]>(t.bytes());
    s.memcpy(raw.get(), t.data, t.bytes());
    s.synchronize();
    convert(raw.get(), t.dtype, out.data(), DType::f32, out.size());
    return out;
}

void upload_f32(Stream& s, const Tensor& t, const float* values) {
    const auto raw = std::make_unique_for_overwrite<char[]>(t.bytes());
    convert(values, DType::f32, raw.get(), t.dtype, t.numel());
    s.upload(t.data, raw.get(), t.bytes());
}

} // namespace shardlab
