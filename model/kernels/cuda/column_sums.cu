// Column sums (bias gradients): one thread per column walks the rows in order, as the CPU does,
// so the result is the CPU's bit for bit; neighbouring threads read neighbouring columns, so
// every row is read coalesced.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"

namespace shardlab::cuda {

namespace {
template <typename T>
__global__ void add_column_sums_kernel(T* dst, const T* src, int rows, int cols) {
    const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= cols) return;
    float s = 0;
    for (int r = 0; r < rows; ++r) s += to_f32(src[std::size_t(r) * cols + c]);
    dst[c] = from_f32<T>(to_f32(dst[c]) + s);
}
} // namespace

void add_column_sums(cudaStream_t s, void* dst, const void* src, int rows, int cols, DType t) {
    if (cols == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("add_column_sums", add_column_sums_kernel<T>, blocks_for(std::size_t(cols), 128),
               128, 0, s, static_cast<T*>(dst), static_cast<const T*>(src), rows, cols);
    });
}

} // namespace shardlab::cuda
