// Column sums (bias gradients), deterministic and parallel: a block of threads per (column block,
// chunk of kColumnChunkRows rows) sums its chunk in row order into an fp32 partial, then one thread
// per column adds the partials in chunk order. Neighbouring threads read neighbouring columns, so
// every row is read coalesced. With one chunk the order is the CPU's, so the bits are too. Both
// sums issue their loads ahead of their adds (in_order.h).
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/in_order.h"
#include "model/kernels/cuda/kernels.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 128;

template <typename T>
__global__ void column_partials_kernel(float* partials, const T* src, int rows, int cols) {
    const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= cols) return;
    const int first = int(blockIdx.y) * kColumnChunkRows;
    const int last = rows - first < kColumnChunkRows ? rows : first + kColumnChunkRows;
    float s = 0;
    in_order(
        last - first, [&](int j) { return src[std::size_t(first + j) * cols + c]; },
        [&](T x) { s += to_f32(x); });
    partials[std::size_t(blockIdx.y) * cols + c] = s;
}

template <typename T>
__global__ void add_partials_kernel(T* dst, const float* partials, int chunks, int cols) {
    const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= cols) return;
    float s = 0;
    in_order(
        chunks, [&](int k) { return partials[std::size_t(k) * cols + c]; },
        [&](float x) { s += x; });
    dst[c] = from_f32<T>(to_f32(dst[c]) + s);
}
} // namespace

void add_column_partials(cudaStream_t s, void* dst, const float* partials, int chunks, int cols,
                         DType t) {
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("add_column_partials", add_partials_kernel<T>,
               blocks_for(std::size_t(cols), kThreads), kThreads, 0, s, static_cast<T*>(dst),
               partials, chunks, cols);
    });
}

void add_column_sums(cudaStream_t s, void* dst, const void* src, int rows, int cols, DType t,
                     float* partials) {
    if (cols == 0 || rows == 0) return;
    const int chunks = column_chunks(rows);
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("column_partials", column_partials_kernel<T>,
               dim3(blocks_for(std::size_t(cols), kThreads), unsigned(chunks)), kThreads, 0, s,
               partials, static_cast<const T*>(src), rows, cols);
    });
    add_column_partials(s, dst, partials, chunks, cols, t);
}

} // namespace shardlab::cuda
