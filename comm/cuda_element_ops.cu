// reduce_add (and --reproducible's int64 add) as grid-stride kernels: a thread an element up to
// the grid's cap, several beyond it.
#include "comm/cuda_element_ops.h"

#include "core/cuda/cuda_stream.h"
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/error.h"

#include <cstdint>

namespace shardlab {

namespace {
template <typename T>
__global__ void reduce_add_kernel(T* out, const T* a, const T* b, std::size_t n, float divisor) {
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const float s = cuda::to_f32(a[i]) + cuda::to_f32(b[i]);
        out[i] = cuda::from_f32<T>(divisor == 1.0f ? s : s / divisor);
    }
}

// --reproducible's fixed-point sums: exact integer adds (comm/reduce_kernels.cpp's CPU twin).
__global__ void add_i64_kernel(std::int64_t* out, const std::int64_t* a, const std::int64_t* b,
                               std::size_t n) {
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        out[i] = a[i] + b[i];
}

class CudaElementOps : public ElementOps {
  public:
    void reduce_add(Stream& s, void* out, const void* a, const void* b, std::size_t n, DType t,
                    float divisor) override {
        if (n == 0) return;
        const unsigned grid = unsigned(std::min<std::size_t>(cuda::blocks_for(n, 256), 65535));
        if (t == DType::i64) {
            check(divisor == 1.0f, "internal: int64 is summed, never averaged");
            cuda::launch("reduce_add_i64", add_i64_kernel, grid, 256, 0, cuda::stream_of(s),
                         static_cast<std::int64_t*>(out), static_cast<const std::int64_t*>(a),
                         static_cast<const std::int64_t*>(b), n);
            return;
        }
        cuda::dispatch(t, [&](auto tag) {
            using T = typename decltype(tag)::type;
            cuda::launch("reduce_add", reduce_add_kernel<T>, grid, 256, 0, cuda::stream_of(s),
                         static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b),
                         n, divisor);
        });
    }
};
} // namespace

std::unique_ptr<ElementOps> make_cuda_element_ops() {
    return std::make_unique<CudaElementOps>();
}

} // namespace shardlab
