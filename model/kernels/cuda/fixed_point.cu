// --reproducible's exact sums on a GPU (model/kernels/fixed_point.h): element-wise conversions,
// and reductions — a maximum and integer sums — that are exact in any order, so the block count
// (which follows the size) changes no bit. Each block reduces its threads (block_reduce) into one
// partial; one thread then folds the partials into the result.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/warp_reduce.h"
#include "model/kernels/fixed_point.h"

#include <algorithm>

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;
constexpr std::size_t kMaxBlocks = 1024;

unsigned blocks(std::size_t n) {
    return unsigned(
        std::max<std::size_t>(1, std::min(kMaxBlocks, std::size_t(blocks_for(n, kThreads)))));
}

template <typename T>
__global__ void accumulate_kernel(std::int64_t* acc, const T* x, std::size_t n, int exponent,
                                  float* partial) {
    float amax = 0;
    for (std::size_t i = std::size_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * kThreads) {
        const float v = to_f32(x[i]);
        amax = fmaxf(amax, fixed::magnitude(v));
        acc[i] += fixed::to_fixed(v, exponent);
    }
    amax = block_reduce<kThreads>(amax, Max{});
    if (threadIdx.x == 0) partial[blockIdx.x] = amax;
}

__global__ void max_partials_kernel(const float* partials, unsigned count, float* amax) {
    float m = *amax;
    for (unsigned i = 0; i < count; ++i) m = fmaxf(m, partials[i]);
    *amax = m;
}

template <typename T>
__global__ void to_float_kernel(T* out, const std::int64_t* acc, std::size_t n, int exponent,
                                double divisor) {
    for (std::size_t i = std::size_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * kThreads)
        out[i] = from_f32<T>(float(fixed::from_fixed(acc[i], exponent, divisor)));
}

template <typename T>
__global__ void squares_kernel(const T* x, std::size_t n, int exponent, std::int64_t* partial) {
    std::int64_t sum = 0;
    for (std::size_t i = std::size_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * kThreads) {
        const double v = to_f32(x[i]);
        sum += fixed::to_fixed(v * v, exponent);
    }
    sum = block_reduce<kThreads>(sum, Plus{});
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void sum_partials_kernel(const std::int64_t* partials, unsigned count,
                                    std::int64_t* out) {
    std::int64_t s = *out;
    for (unsigned i = 0; i < count; ++i) s += partials[i];
    *out = s;
}

__global__ void add_kernel(std::int64_t* dst, const std::int64_t* src, std::size_t n) {
    for (std::size_t i = std::size_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * kThreads)
        dst[i] += src[i];
}
} // namespace

std::size_t fixed_scratch_bytes(std::size_t n) {
    return blocks(n) * sizeof(std::int64_t);
}

void fixed_accumulate(cudaStream_t s, std::int64_t* acc, const void* x, DType t, std::size_t n,
                      int exponent, float* amax, void* scratch) {
    if (n == 0) return;
    const unsigned b = blocks(n);
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("fixed_accumulate", accumulate_kernel<T>, b, kThreads, 0, s, acc,
               static_cast<const T*>(x), n, exponent, static_cast<float*>(scratch));
    });
    launch("fixed_accumulate_max", max_partials_kernel, 1, 1, 0, s,
           static_cast<const float*>(scratch), b, amax);
}

void fixed_to_float(cudaStream_t s, void* out, DType t, const std::int64_t* acc, std::size_t n,
                    int exponent, double divisor) {
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("fixed_to_float", to_float_kernel<T>, blocks(n), kThreads, 0, s,
               static_cast<T*>(out), acc, n, exponent, divisor);
    });
}

void fixed_squares(cudaStream_t s, const void* x, DType t, std::size_t n, int exponent,
                   std::int64_t* out, void* scratch) {
    if (n == 0) return;
    const unsigned b = blocks(n);
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("fixed_squares", squares_kernel<T>, b, kThreads, 0, s, static_cast<const T*>(x), n,
               exponent, static_cast<std::int64_t*>(scratch));
    });
    launch("fixed_squares_sum", sum_partials_kernel, 1, 1, 0, s,
           static_cast<const std::int64_t*>(scratch), b, out);
}

void fixed_add(cudaStream_t s, std::int64_t* dst, const std::int64_t* src, std::size_t n) {
    if (n == 0) return;
    launch("fixed_add", add_kernel, blocks(n), kThreads, 0, s, dst, src, n);
}

} // namespace shardlab::cuda
