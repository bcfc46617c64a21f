// Fused softmax + cross-entropy, one block per row, in two sweeps of the row: the first reads it
// once for the row's maximum and sum of exponentials together (the online softmax: each thread
// keeps a running maximum m and sum s of e^(x - m), rescaling s when m grows), the second reads it
// again and writes the gradient (softmax - onehot) * scale over the logits. The row is walked in
// chunks of W = Packed<T>::size columns (row_chunks.h: one 16-byte load or store where the chunk
// is whole and aligned, element by element otherwise), thread t taking chunks t, t + 256, ...
// (kInFlight of them loaded at a time, then used in that order): a fixed order of every sum
// whatever the alignment. Rows are ld apart and only their first V
// columns are the vocabulary: the padded columns V..ld-1 are not read and get a zero gradient.
// The mean over rows is summed by one thread, in row order, as the CPU does; the block stages the
// rows' losses in shared memory 256 at a time, so that thread waits for one global load per 256
// rows rather than one per row (16,384 rows in GPT-2's step).
//
// Against the former three-sweep kernel (max, sum, gradient; scalar loads, stride-256 elements),
// the bits of the sum, the loss and the gradient change: the sum is grouped by chunk and rescaled
// as the running maximum grows (each term picks up at most one rounding per rescale: at most
// ceil(chunks / 256) + 13 of them, far inside the V u bound the tests hold the CPU to), and the
// probability is e^(x - max) * (1 / sum), the CPU's form, instead of e^(x - log-sum-exp). The
// exponentials are ex2's (exp_of below), where CUDA's expf was also within 2 ulp.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/cuda/unroll.h"
#include "model/kernels/cuda/fast_exp2.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/row_chunks.h"
#include "model/kernels/cuda/with_constant.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / 32;
constexpr int kInFlight = 4; // chunks a thread loads before it uses them

// e^x for x <= 0 (an element less the running maximum) as 2^(x log2 e) by the SFU's ex2
// (fast_exp2.h): 3 instructions where expf takes 11, twice per logit. The product x log2 e adds
// a rounding, a relative error of about |x| u in the result: large only where e^x is tiny.
__device__ __forceinline__ float exp_of(float x) {
    return fast_exp2(x * kLog2e);
}

// A running maximum and the sum of e^(x - m) over the elements seen; {-inf, 0} when none.
struct MaxSum {
    float m = -INFINITY;
    float s = 0.0f;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {}; // both empty (or all -inf): e^(-inf - -inf) would be NaN
    return {m, a.s * exp_of(a.m - m) + b.s * exp_of(b.m - m)};
}

// Folds one chunk's n valid elements into r: s rescaled once to the new maximum, then the chunk's
// exponentials added in column order.
template <int W>
__device__ __forceinline__ void fold_chunk(MaxSum& r, const float (&f)[W], int n) {
    // Loops to W, not n: unrolled, f stays in registers (a loop to n put the batch of chunks in
    // local memory).
    float cm = -INFINITY;
    SHARDLAB_UNROLL
    for (int e = 0; e < W; ++e)
        if (e < n) cm = fmaxf(cm, f[e]);
    if (cm == -INFINITY) return; // nothing but -inf: adds 0
    const float m = fmaxf(r.m, cm);
    float s = r.s * exp_of(r.m - m);
    SHARDLAB_UNROLL
    for (int e = 0; e < W; ++e)
        if (e < n) s += exp_of(f[e] - m);
    r = {m, s};
}

// The block's (max, sum): a down-shuffle tree per warp into its lane 0, then every thread folds
// the warps' results in warp order — the same operations on the same values, so the same bits in
// every thread (a butterfly would need combine to be commutative bit for bit, which FMA
// contraction does not promise).
__device__ __forceinline__ MaxSum block_max_sum(MaxSum r, float (&ms)[kWarps],
                                                float (&ss)[kWarps]) {
    for (int offset = 16; offset > 0; offset /= 2)
        r = combine(r, {__shfl_down_sync(0xffffffffu, r.m, offset),
                        __shfl_down_sync(0xffffffffu, r.s, offset)});
    const int warp = int(threadIdx.x / 32);
    if (threadIdx.x % 32 == 0) ms[warp] = r.m, ss[warp] = r.s;
    __syncthreads();
    MaxSum total;
    for (unsigned w = 0; w < kWarps; ++w) total = combine(total, {ms[w], ss[w]});
    return total;
}

// A thread's chunks k0, k0 + 256, ... (kInFlight of them) of a row of V columns, all loaded before
// any is used: one 16-byte load in flight per thread left the sweeps waiting on memory's latency
// (the loop's body, with its exponentials, was not unrolled). n[b]: the chunk's valid columns,
// <= 0 for a chunk at or past V (then f[b] is zeros).
template <typename T, int W>
__device__ __forceinline__ void load_chunks(float (&f)[kInFlight][W], int (&n)[kInFlight],
                                            const T* z, int k0, int V) {
    SHARDLAB_UNROLL
    for (int b = 0; b < kInFlight; ++b) {
        const int c0 = (k0 + b * int(kThreads)) * W;
        n[b] = c0 < V ? load_chunk(f[b], z, c0, V) : 0;
        if (c0 >= V)
            for (float& x : f[b]) x = 0.0f;
    }
}

// Whether each of a batch's chunks is whole (W valid columns): all of a row's batches but its last
// one or two. Those fold and write with W known when compiled (with_constant.h), a copy of the
// code without the per-element tests of n (the same operations in the same order: the same bits).
template <int W>
__device__ __forceinline__ bool whole(const int (&n)[kInFlight]) {
    bool all = true;
    SHARDLAB_UNROLL
    for (int b = 0; b < kInFlight; ++b) all = all && n[b] == W;
    return all;
}

// The gradient of one chunk (first column c0, n of its columns inside V) into f: (softmax -
// onehot) * scale, zeros past V.
template <int W>
__device__ __forceinline__ void chunk_gradient(float (&f)[W], int n, int c0, int target, MaxSum row,
                                               float inv_sum, float dlogits_scale) {
    for (int e = 0; e < W; ++e) {
        const float onehot = c0 + e == target ? 1.0f : 0.0f;
        f[e] = e < n ? (exp_of(f[e] - row.m) * inv_sum - onehot) * dlogits_scale
                     : 0.0f; // past V: the padding's zero gradient
    }
}

template <typename T>
__global__ void cross_entropy_rows_kernel(T* logits, const std::uint16_t* targets, int V, int ld,
                                          float dlogits_scale, double* row_losses) {
    constexpr int W = Packed<T>::size;
    __shared__ float ms[kWarps], ss[kWarps];
    const int r = int(blockIdx.x);
    T* z = logits + std::size_t(r) * ld;
    const int target = targets[r];
    // Read before the barrier in block_max_sum; the gradient overwrites it only after.
    const float z_target = threadIdx.x == 0 ? to_f32(z[target]) : 0.0f;
    float f[kInFlight][W];
    int n[kInFlight];
    MaxSum own;
    for (int k0 = int(threadIdx.x); k0 * W < V; k0 += kInFlight * int(kThreads)) {
        load_chunks(f, n, z, k0, V);
        with_constant(whole<W>(n), [&](auto all_whole) {
            SHARDLAB_UNROLL
            for (int b = 0; b < kInFlight; ++b) // n <= 0: adds nothing
                fold_chunk(own, f[b], decltype(all_whole)::value ? W : n[b]);
        });
    }
    const MaxSum row = block_max_sum(own, ms, ss);
    if (threadIdx.x == 0) row_losses[r] = double(logf(row.s) + row.m - z_target);
    if (dlogits_scale == 0.0f) return;
    const float inv_sum = 1.0f / row.s;
    for (int k0 = int(threadIdx.x); k0 * W < ld; k0 += kInFlight * int(kThreads)) {
        // Only this thread read these columns in the first sweep: no barrier needed.
        load_chunks(f, n, z, k0, V);
        with_constant(whole<W>(n), [&](auto all_whole) {
            constexpr bool kWhole = decltype(all_whole)::value; // every chunk inside V and ld
            SHARDLAB_UNROLL
            for (int b = 0; b < kInFlight; ++b) {
                const int c0 = (k0 + b * int(kThreads)) * W;
                if (!kWhole && c0 >= ld) break;
                chunk_gradient(f[b], kWhole ? W : n[b], c0, target, row, inv_sum, dlogits_scale);
                store_chunk(z, c0, ld, f[b]);
            }
        });
    }
}

__global__ void mean_kernel(const double* row_losses, int N, double* loss) {
    __shared__ double tile[kThreads];
    double total = 0; // thread 0's
    for (int base = 0; base < N; base += int(kThreads)) {
        const int i = base + int(threadIdx.x);
        tile[threadIdx.x] = i < N ? row_losses[i] : 0.0;
        __syncthreads();
        if (threadIdx.x == 0)
            for (int k = 0; k < min(int(kThreads), N - base); ++k) total += tile[k];
        __syncthreads(); // the tile is read before the next one overwrites it
    }
    if (threadIdx.x == 0) *loss = N > 0 ? total / N : 0.0;
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
    launch("cross_entropy_mean", mean_kernel, 1, kThreads, 0, s, row_losses, N, loss);
}

} // namespace shardlab::cuda
