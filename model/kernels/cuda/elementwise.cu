// Element-wise kernels, one thread per element (grid-stride, so any n fits the grid limits):
// accumulate, convert, fill, and the bias rows a GEMM with a bias starts from.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;

unsigned grid_for(std::size_t n) {
    return unsigned(std::min<std::size_t>(blocks_for(n, kThreads), 65535));
}

template <typename T>
__global__ void accumulate_kernel(T* dst, const T* src, std::size_t n) {
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        dst[i] = from_f32<T>(to_f32(dst[i]) + to_f32(src[i]));
}

template <typename D, typename S>
__global__ void convert_kernel(D* dst, const S* src, std::size_t n) {
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        dst[i] = from_f32<D>(to_f32(src[i]));
}

template <typename T>
__global__ void fill_kernel(T* dst, std::size_t n, float value) {
    const T v = from_f32<T>(value);
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        dst[i] = v;
}

template <typename T>
__global__ void bias_rows_kernel(T* out, const T* bias, std::size_t rows, std::size_t cols) {
    const std::size_t n = rows * cols;
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        out[i] = bias[i % cols];
}
} // namespace

void accumulate(cudaStream_t s, void* dst, const void* src, std::size_t n, DType t) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("accumulate", accumulate_kernel<T>, grid_for(n), kThreads, 0, s,
               static_cast<T*>(dst), static_cast<const T*>(src), n);
    });
}

void convert(cudaStream_t s, void* dst, DType dst_type, const void* src, DType src_type,
             std::size_t n) {
    if (n == 0) return;
    if (dst_type == src_type) {
        check_cuda(cudaMemcpyAsync(dst, src, n * dtype_size(dst_type), cudaMemcpyDeviceToDevice, s),
                   "cudaMemcpyAsync");
        return;
    }
    dispatch(dst_type, [&](auto dtag) {
        dispatch(src_type, [&](auto stag) {
            using D = typename decltype(dtag)::type;
            using S = typename decltype(stag)::type;
            launch("convert", convert_kernel<D, S>, grid_for(n), kThreads, 0, s,
                   static_cast<D*>(dst), static_cast<const S*>(src), n);
        });
    });
}

void fill(cudaStream_t s, void* dst, DType t, std::size_t n, float value) {
    if (n == 0) return;
    if (value == 0.0f) { // +0 is all zero bits in every dtype
        check_cuda(cudaMemsetAsync(dst, 0, n * dtype_size(t), s), "cudaMemsetAsync");
        return;
    }
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("fill", fill_kernel<T>, grid_for(n), kThreads, 0, s, static_cast<T*>(dst), n, value);
    });
}

void bias_rows(cudaStream_t s, void* out, const void* bias, int rows, int cols, DType t) {
    const std::size_t n = std::size_t(rows) * std::size_t(cols);
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("bias_rows", bias_rows_kernel<T>, grid_for(n), kThreads, 0, s, static_cast<T*>(out),
               static_cast<const T*>(bias), std::size_t(rows), std::size_t(cols));
    });
}

} // namespace shardlab::cuda
