// TensorView helpers.
#include "core/tensor.h"

namespace shardlab {

std::string TensorView::shape_string() const {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

} // namespace shardlab
