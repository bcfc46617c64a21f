// Column sums (bias gradients), deterministic and parallel: a thread per (column, chunk of
// kColumnChunkRows rows) sums its chunk in row order into an fp32 partial (column_chunk.h), then
// one thread per column adds the partials in chunk order. With one chunk the order is the CPU's,
// so the bits are too. Both sums issue their loads ahead of their adds (in_order.h).
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/column_chunk.h"
#include "model/kernels/cuda/in_order.h"
#include "model/kernels/cuda/kernels.h"

namespace shardlab::cuda {

namespace {

template <typename T>
__global__ void column_partials_kernel(float* partials, const T* src, int rows, int cols) {
    const ColumnChunk chunk = ColumnChunk::mine(rows);
    if (chunk.c >= cols) return;
    float s = 0;
    chunk.walk(
        cols, [&](int, std::size_t i) { return src[i]; }, [&](T x) { s += to_f32(x); });
    partials[chunk.partial(cols)] = s;
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
               blocks_for(std::size_t(cols), kColumnThreads), kColumnThreads, 0, s,
               static_cast<T*>(dst), partials, chunks, cols);
    });
}

void add_column_sums(cudaStream_t s, void* dst, const void* src, int rows, int cols, DType t,
                     float* partials) {
    if (cols == 0 || rows == 0) return;
    const int chunks = column_chunks(rows);
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("column_partials", column_partials_kernel<T>, column_chunk_grid(rows, cols),
               kColumnThreads, 0, s, partials, static_cast<const T*>(src), rows, cols);
    });
    add_column_partials(s, dst, partials, chunks, cols, t);
}

} // namespace shardlab::cuda
