// LayerNorm: one warp per row for the statistics, the normalisation and din (lanes stride over
// the row, then a butterfly sum); dweight and dbias are column sums, one thread per column
// walking the rows in order — the CPU's order, so those two match it bit for bit.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/warp_reduce.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kWarpsPerBlock = 8;

template <typename T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* in,
                                         const T* weight, const T* bias, int N, int C) {
    const int row = int(blockIdx.x * kWarpsPerBlock + threadIdx.x / 32);
    const int lane = int(threadIdx.x % 32);
    if (row >= N) return; // a whole warp leaves together
    const T* x = in + std::size_t(row) * C;
    float sum = 0;
    for (int c = lane; c < C; c += 32) sum += to_f32(x[c]);
    const float m = warp_sum(sum) / float(C);
    float var = 0;
    for (int c = lane; c < C; c += 32) {
        const float d = to_f32(x[c]) - m;
        var += d * d;
    }
    const float s = 1.0f / sqrtf(warp_sum(var) / float(C) + 1e-5f);
    T* y = out + std::size_t(row) * C;
    for (int c = lane; c < C; c += 32)
        y[c] = from_f32<T>((to_f32(x[c]) - m) * s * to_f32(weight[c]) + to_f32(bias[c]));
    if (lane == 0) mean[row] = m, rstd[row] = s;
}

template <typename T>
__global__ void layernorm_backward_input_kernel(T* din, const T* dout, const T* in, const T* weight,
                                                const float* mean, const float* rstd, int N,
                                                int C) {
    const int row = int(blockIdx.x * kWarpsPerBlock + threadIdx.x / 32);
    const int lane = int(threadIdx.x % 32);
    if (row >= N) return;
    const T* x = in + std::size_t(row) * C;
    const T* dy = dout + std::size_t(row) * C;
    const float m = mean[row], s = rstd[row];
    float dnorm_sum = 0, dnorm_xhat_sum = 0;
    for (int c = lane; c < C; c += 32) {
        const float xhat = (to_f32(x[c]) - m) * s;
        const float dnorm = to_f32(weight[c]) * to_f32(dy[c]);
        dnorm_sum += dnorm;
        dnorm_xhat_sum += dnorm * xhat;
    }
    const float dnorm_mean = warp_sum(dnorm_sum) / float(C);
    const float dnorm_xhat_mean = warp_sum(dnorm_xhat_sum) / float(C);
    T* dx = din + std::size_t(row) * C;
    for (int c = lane; c < C; c += 32) {
        const float xhat = (to_f32(x[c]) - m) * s;
        const float dnorm = to_f32(weight[c]) * to_f32(dy[c]);
        dx[c] = from_f32<T>(to_f32(dx[c]) + (dnorm - dnorm_mean - xhat * dnorm_xhat_mean) * s);
    }
}

// The parameter gradients' partial column sums over one chunk of rows (column_sums.cu's scheme):
// dweight's partials first, then dbias's.
template <typename T>
__global__ void layernorm_params_partials_kernel(float* partials, const T* dout, const T* in,
                                                 const float* mean, const float* rstd, int N,
                                                 int C) {
    const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= C) return;
    const int first = int(blockIdx.y) * kColumnChunkRows;
    const int last = N - first < kColumnChunkRows ? N : first + kColumnChunkRows;
    float dw = 0, db = 0;
    for (int r = first; r < last; ++r) {
        const float dy = to_f32(dout[std::size_t(r) * C + c]);
        dw += dy * (to_f32(in[std::size_t(r) * C + c]) - mean[r]) * rstd[r];
        db += dy;
    }
    const std::size_t chunks = gridDim.y;
    partials[std::size_t(blockIdx.y) * C + c] = dw;
    partials[(chunks + blockIdx.y) * C + c] = db;
}
} // namespace

void layernorm_forward(cudaStream_t s, void* out, float* mean, float* rstd, const void* in,
                       const void* weight, const void* bias, int N, int C, DType t) {
    if (N == 0) return;
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("layernorm_forward", layernorm_forward_kernel<T>,
               blocks_for(std::size_t(N), kWarpsPerBlock), kWarpsPerBlock * 32, 0, s,
               static_cast<T*>(out), mean, rstd, static_cast<const T*>(in),
               static_cast<const T*>(weight), static_cast<const T*>(bias), N, C);
    });
}

void layernorm_backward(cudaStream_t s, void* din, void* dweight, void* dbias, const void* dout,
                        const void* in, const void* weight, const float* mean, const float* rstd,
                        int N, int C, DType t, float* partials) {
    if (N == 0) return;
    const int chunks = column_chunks(N);
    dispatch(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch("layernorm_backward_input", layernorm_backward_input_kernel<T>,
               blocks_for(std::size_t(N), kWarpsPerBlock), kWarpsPerBlock * 32, 0, s,
               static_cast<T*>(din), static_cast<const T*>(dout), static_cast<const T*>(in),
               static_cast<const T*>(weight), mean, rstd, N, C);
        launch("layernorm_params_partials", layernorm_params_partials_kernel<T>,
               dim3(blocks_for(std::size_t(C), 128), unsigned(chunks)), 128, 0, s, partials,
               static_cast<const T*>(dout), static_cast<const T*>(in), mean, rstd, N, C);
    });
    add_column_partials(s, dweight, partials, chunks, C, t);
    add_column_partials(s, dbias, partials + std::size_t(chunks) * C, chunks, C, t);
}

} // namespace shardlab::cuda
