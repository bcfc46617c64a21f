// Sum of squares in double, deterministic: a part of n elements is cut into a number of blocks
// that depends on n only; each thread sums its strided elements in order, each block its threads
// by a fixed tree into one partial; then one thread adds every partial, in order. The same parts
// give the same bits on every call — what keeps ZeRO stages bitwise equal on a GPU.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/warp_reduce.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;
constexpr std::size_t kMaxBlocks = 1024;

template <typename T>
__global__ void squared_norm_kernel(const T* x, std::size_t n, double* partial) {
    __shared__ double warp_sums[kThreads / 32];
    double s = 0;
    for (std::size_t i = std::size_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * kThreads) {
        const double v = to_f32(x[i]);
        s += v * v;
    }
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0;
        for (unsigned w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
        partial[blockIdx.x] = total;
    }
}

__global__ void sum_partials_kernel(const double* partials, std::size_t count, float* out) {
    double total = 0;
    for (std::size_t i = 0; i < count; ++i) total += partials[i];
    *out = float(total);
}
} // namespace

std::size_t squared_norm_scratch(std::size_t numel) {
    return std::max<std::size_t>(1, std::min(kMaxBlocks, std::size_t(blocks_for(numel, kThreads))));
}

void squared_norm_part(cudaStream_t s, const void* x, std::size_t n, DType t, double* partial) {
    const std::size_t blocks = squared_norm_scratch(n);
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("squared_norm", squared_norm_kernel<T>, unsigned(blocks), kThreads, 0, s,
               static_cast<const T*>(x), n, partial);
    });
}

void squared_norm_finish(cudaStream_t s, const double* partials, std::size_t count, float* out) {
    launch("squared_norm_finish", sum_partials_kernel, 1, 1, 0, s, partials, count, out);
}

} // namespace shardlab::cuda
