// Token + position embedding. Forward: one thread per output element. Backward without atomics
// on the sums: the positions are first bucketed by token (a stable counting sort, in one block),
// then each vocabulary row is summed by one block in position order — the CPU's algorithm, so
// the same bits — and each position row of dwpe by one thread per column over the batch.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "model/kernels/cuda/kernels.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;

template <typename T>
__global__ void embedding_forward_kernel(T* out, const std::uint16_t* tokens, const T* wte,
                                         const T* wpe, int T_, int C, std::size_t n) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const std::size_t bt = i / std::size_t(C);
    const int c = int(i % std::size_t(C)), t = int(bt % std::size_t(T_));
    out[i] = from_f32<T>(to_f32(wte[std::size_t(tokens[bt]) * C + c]) +
                         to_f32(wpe[std::size_t(t) * C + c]));
}

// start [V + 1]: bucket v is order[start[v] .. start[v + 1]); cursor [V]; order [N]. One block:
// counts with integer atomics (exact, so deterministic), an exclusive scan over the counts (each
// thread a contiguous slice, then the slices' totals by thread 0), and the positions placed by
// thread 0 in position order, which keeps each bucket in the CPU's order.
__global__ void bucket_by_token_kernel(int* start, int* cursor, int* order,
                                       const std::uint16_t* tokens, int N, int V) {
    const int tid = int(threadIdx.x), nt = int(blockDim.x);
    __shared__ int slice_total[1024];
    for (int v = tid; v <= V; v += nt) start[v] = 0;
    __syncthreads();
    for (int i = tid; i < N; i += nt) atomicAdd(&start[tokens[i] + 1], 1);
    __syncthreads();
    const int per = (V + nt) / nt; // entries 1..V of start, as slices
    const int lo = 1 + tid * per, hi = min(V + 1, lo + per);
    int running = 0;
    for (int v = lo; v < hi; ++v) running += start[v], start[v] = running;
    slice_total[tid] = running;
    __syncthreads();
    if (tid == 0)
        for (int k = 1; k < nt; ++k) slice_total[k] += slice_total[k - 1];
    __syncthreads();
    if (tid > 0)
        for (int v = lo; v < hi; ++v) start[v] += slice_total[tid - 1];
    __syncthreads();
    for (int v = tid; v < V; v += nt) cursor[v] = start[v];
    __syncthreads();
    if (tid == 0)
        for (int i = 0; i < N; ++i) order[cursor[tokens[i]]++] = i;
}

template <typename T>
__global__ void embedding_backward_wte_kernel(T* dwte, const T* dout, const int* start,
                                              const int* order, int C) {
    const int v = int(blockIdx.x);
    const int begin = start[v], end = start[v + 1];
    if (begin == end) return;
    T* row = dwte + std::size_t(v) * C;
    for (int c = int(threadIdx.x); c < C; c += int(blockDim.x)) {
        float acc = 0;
        for (int k = begin; k < end; ++k) acc += to_f32(dout[std::size_t(order[k]) * C + c]);
        row[c] = from_f32<T>(to_f32(row[c]) + acc);
    }
}

template <typename T>
__global__ void embedding_backward_wpe_kernel(T* dwpe, const T* dout, int B, int T_, int C) {
    const int t = int(blockIdx.y);
    const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= C) return;
    float s = 0;
    for (int b = 0; b < B; ++b) s += to_f32(dout[(std::size_t(b) * T_ + t) * C + c]);
    T* row = dwpe + std::size_t(t) * C;
    row[c] = from_f32<T>(to_f32(row[c]) + s);
}
} // namespace

void embedding_forward(cudaStream_t s, void* out, const std::uint16_t* tokens, const void* wte,
                       const void* wpe, int B, int T, int C, DType t) {
    const std::size_t n = std::size_t(B) * T * C;
    if (n == 0) return;
    dispatch(t, [&](auto tag) {
        using E = typename decltype(tag)::type;
        launch("embedding_forward", embedding_forward_kernel<E>, blocks_for(n, kThreads), kThreads,
               0, s, static_cast<E*>(out), tokens, static_cast<const E*>(wte),
               static_cast<const E*>(wpe), T, C, n);
    });
}

void embedding_backward(cudaStream_t s, void* dwte, void* dwpe, const void* dout,
                        const std::uint16_t* tokens, int B, int T, int C, int V, DType t,
                        int* scratch) {
    const int N = B * T;
    if (N == 0) return;
    int* start = scratch;
    int* cursor = start + V + 1;
    int* order = cursor + V;
    launch("bucket_by_token", bucket_by_token_kernel, 1, 1024, 0, s, start, cursor, order, tokens,
           N, V);
    dispatch(t, [&](auto tag) {
        using E = typename decltype(tag)::type;
        launch("embedding_backward_wte", embedding_backward_wte_kernel<E>, unsigned(V), 128, 0, s,
               static_cast<E*>(dwte), static_cast<const E*>(dout), start, order, C);
        launch("embedding_backward_wpe", embedding_backward_wpe_kernel<E>,
               dim3(blocks_for(std::size_t(C), 128), unsigned(T)), 128, 0, s, static_cast<E*>(dwpe),
               static_cast<const E*>(dout), B, T, C);
    });
}

} // namespace shardlab::cuda
