// Shapes, views and host round trips.
#include "core/tensor.h"

#include "core/error.h"

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
    std::vector<char> raw(t.bytes());
    s.memcpy(raw.data(), t.data, raw.size());
    s.synchronize();
    std::vector<float> out(t.numel());
    convert(raw.data(), t.dtype, out.data(), DType::f32, out.size());
    return out;
}

void upload_f32(Stream& s, const Tensor& t, const float* values) {
    std::vector<char> raw(t.bytes());
    convert(values, DType::f32, raw.data(), t.dtype, t.numel());
    s.upload(t.data, raw.data(), raw.size());
}

} // namespace shardlab
