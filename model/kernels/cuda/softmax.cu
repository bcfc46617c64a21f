// Attention's causal softmax and its backward, one warp per row of a T x T score matrix: row i
// keeps columns 0..i (the positions it may attend to); the rest of the row is written as zero.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/warp_reduce.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kWarpsPerBlock = 8;

template <typename P>
__global__ void causal_softmax_kernel(P* prob, const float* scores, std::size_t rows, int T) {
    const std::size_t row = std::size_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    const int lane = int(threadIdx.x % 32);
    if (row >= rows) return;
    const int i = int(row % std::size_t(T)); // the query's position
    const float* s = scores + row * T;
    P* p = prob + row * T;
    float maxv = -INFINITY;
    for (int j = lane; j <= i; j += 32) maxv = fmaxf(maxv, s[j]);
    maxv = warp_max(maxv);
    float sum = 0;
    for (int j = lane; j <= i; j += 32) sum += expf(s[j] - maxv);
    sum = warp_sum(sum);
    for (int j = lane; j < T; j += 32) p[j] = from_f32<P>(j <= i ? expf(s[j] - maxv) / sum : 0.0f);
}

template <typename P>
__global__ void causal_softmax_backward_kernel(P* dscore, const float* dprob, const P* prob,
                                               std::size_t rows, int T, float scale) {
    const std::size_t row = std::size_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    const int lane = int(threadIdx.x % 32);
    if (row >= rows) return;
    const int i = int(row % std::size_t(T));
    const float* dp = dprob + row * T;
    const P* p = prob + row * T;
    float dot = 0; // sum_j p_j dp_j: the softmax's backward
    for (int j = lane; j <= i; j += 32) dot += to_f32(p[j]) * dp[j];
    dot = warp_sum(dot);
    P* ds = dscore + row * T;
    for (int j = lane; j < T; j += 32)
        ds[j] = from_f32<P>(j <= i ? to_f32(p[j]) * (dp[j] - dot) * scale : 0.0f);
}
} // namespace

void causal_softmax(cudaStream_t s, void* prob, const float* scores, int matrices, int T, DType t) {
    const std::size_t rows = std::size_t(matrices) * T;
    if (rows == 0) return;
    dispatch(t, [&](auto tag) {
        using P = typename decltype(tag)::type;
        launch("causal_softmax", causal_softmax_kernel<P>, blocks_for(rows, kWarpsPerBlock),
               kWarpsPerBlock * 32, 0, s, static_cast<P*>(prob), scores, rows, T);
    });
}

void causal_softmax_backward(cudaStream_t s, void* dscore, const float* dprob, const void* prob,
                             int matrices, int T, float scale, DType t) {
    const std::size_t rows = std::size_t(matrices) * T;
    if (rows == 0) return;
    dispatch(t, [&](auto tag) {
        using P = typename decltype(tag)::type;
        launch("causal_softmax_backward", causal_softmax_backward_kernel<P>,
               blocks_for(rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0, s, static_cast<P*>(dscore),
               dprob, static_cast<const P*>(prob), rows, T, scale);
    });
}

} // namespace shardlab::cuda
