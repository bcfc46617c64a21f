// Fused softmax + cross-entropy, one block per row: the row's maximum and sum of exponentials by
// block reductions, its loss in double, then (for training) the gradient written over the logits.
// The mean over rows is taken by one thread, in row order, as the CPU does. Rows are ld apart and
// only their first V columns are the vocabulary: the padded columns V..ld-1 are ignored by the
// loss and get a zero gradient.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/warp_reduce.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;

template <typename T>
__global__ void cross_entropy_rows_kernel(T* logits, const std::uint16_t* targets, int V, int ld,
                                          float dlogits_scale, double* row_losses) {
    __shared__ float scratch[32];
    const int r = int(blockIdx.x);
    T* z = logits + std::size_t(r) * ld;
    float maxv = -INFINITY;
    for (int v = int(threadIdx.x); v < V; v += int(blockDim.x)) maxv = fmaxf(maxv, to_f32(z[v]));
    maxv = block_max(maxv, scratch);
    float sum = 0;
    for (int v = int(threadIdx.x); v < V; v += int(blockDim.x)) sum += expf(to_f32(z[v]) - maxv);
    sum = block_sum(sum, scratch);
    const float log_sum = logf(sum) + maxv;
    const int target = targets[r];
    if (threadIdx.x == 0) row_losses[r] = double(log_sum - to_f32(z[target]));
    if (dlogits_scale == 0.0f) return;
    __syncthreads(); // z[target] has been read before anyone overwrites it
    for (int v = int(threadIdx.x); v < V; v += int(blockDim.x)) {
        const float p = expf(to_f32(z[v]) - log_sum);
        z[v] = from_f32<T>((p - (v == target ? 1.0f : 0.0f)) * dlogits_scale);
    }
    for (int v = V + int(threadIdx.x); v < ld; v += int(blockDim.x)) z[v] = from_f32<T>(0.0f);
}

__global__ void mean_kernel(const double* row_losses, int N, double* loss) {
    double total = 0;
    for (int r = 0; r < N; ++r) total += row_losses[r];
    *loss = N > 0 ? total / N : 0.0;
}
} // namespace

void cross_entropy(cudaStream_t s, void* logits, const std::uint16_t* targets, int N, int V, int ld,
                   float dlogits_scale, double* row_losses, double* loss, DType t) {
    if (N > 0)
        dispatch(t, [&](auto tag) {
            using T = typename decltype(tag)::type;
            launch("cross_entropy_rows", cross_entropy_rows_kernel<T>, unsigned(N), kThreads, 0, s,
                   static_cast<T*>(logits), targets, V, ld, dlogits_scale, row_losses);
        });
    launch("cross_entropy_mean", mean_kernel, 1, 1, 0, s, row_losses, N, loss);
}

} // namespace shardlab::cuda
