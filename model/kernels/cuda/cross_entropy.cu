// Fused softmax + cross-entropy, one block per row, in two sweeps of the row: the first reads it
// once for the row's maximum and sum of exponentials together (the online softmax: each thread
// keeps a running maximum m and sum s of e^(x - m), rescaling s when m grows), the second writes
// the gradient (softmax - onehot) * scale over the logits, taking the values the first read from a
// copy of the row in shared memory (all of it for GPT-2's 16-bit rows on an H100; the part that
// does not fit is read again). The row is walked in chunks of W = Packed<T>::size columns (16
// bytes: one load or store where the chunk is whole and aligned, element by element otherwise),
// thread t taking chunks t, t + 256, ... (kInFlight of them loaded at a time, then used in that
// order): a fixed order of every sum whatever the alignment. Rows are ld apart and only their first
// V columns are the vocabulary: the padded columns V..ld-1 are not read and get a zero gradient.
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

#include <algorithm>

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / 32;
constexpr int kInFlight = 8; // chunks a thread loads before it uses them

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

// A thread's batch of chunks k0, k0 + 256, ... (kInFlight of them) of a row of V columns, as
// stored (16 bytes each; zeros past V), all loaded before any is used: one 16-byte load in flight
// per thread left the sweeps waiting on memory's latency. n[b]: the chunk's valid columns, <= 0
// for a chunk at or past V. The first sweep loads from global memory and copies each chunk below
// `cached` into the block's row cache; the second takes those from the cache.
template <typename T, bool kFromCache>
__device__ __forceinline__ void load_batch(Packed<T> (&p)[kInFlight], int (&n)[kInFlight],
                                           const T* z, Packed<T>* cache, int cached, int k0,
                                           int V) {
    constexpr int W = Packed<T>::size;
    SHARDLAB_UNROLL
    for (int b = 0; b < kInFlight; ++b) {
        const int k = k0 + b * int(kThreads), c0 = k * W;
        if (kFromCache && k < cached) { // a chunk of the copy: inside V
            n[b] = min(W, V - c0);
            p[b] = cache[k];
            continue;
        }
        p[b] = load_stored_chunk(z, c0, V, n[b]); // at or past V: zeros, nothing read
        if (!kFromCache && k < cached) cache[k] = p[b];
    }
}

template <typename T>
__device__ __forceinline__ void unpack(float (&f)[Packed<T>::size], const Packed<T>& p) {
    SHARDLAB_UNROLL
    for (int e = 0; e < Packed<T>::size; ++e) f[e] = to_f32(p.v[e]);
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

// One block per row. The row's first `cached` chunks stay in dynamic shared memory between the
// sweeps (cached_chunks below: all of a GPT-2 row in 16-bit on an H100), so the second sweep reads
// only the rest from global memory: one read of the logits and one write, not two reads.
template <typename T>
__global__ void cross_entropy_rows_kernel(T* logits, const std::uint16_t* targets, int V, int ld,
                                          float dlogits_scale, double* row_losses, int cached) {
    constexpr int W = Packed<T>::size;
    __shared__ float ms[kWarps], ss[kWarps];
    SHARDLAB_DYNAMIC_SHARED(unsigned char, raw);
    Packed<T>* cache = reinterpret_cast<Packed<T>*>(raw);
    const int r = int(blockIdx.x);
    T* z = logits + std::size_t(r) * ld;
    const int target = targets[r];
    // Read before the barrier in block_max_sum; the gradient overwrites it only after.
    const float z_target = threadIdx.x == 0 ? to_f32(z[target]) : 0.0f;
    Packed<T> p[kInFlight];
    int n[kInFlight];
    MaxSum own;
    for (int k0 = int(threadIdx.x); k0 * W < V; k0 += kInFlight * int(kThreads)) {
        load_batch<T, false>(p, n, z, cache, cached, k0, V);
        with_constant(whole<W>(n), [&](auto all_whole) {
            SHARDLAB_UNROLL
            for (int b = 0; b < kInFlight; ++b) { // n <= 0: adds nothing
                float f[W];
                unpack(f, p[b]);
                fold_chunk(own, f, decltype(all_whole)::value ? W : n[b]);
            }
        });
    }
    const MaxSum row = block_max_sum(own, ms, ss);
    if (threadIdx.x == 0) row_losses[r] = double(logf(row.s) + row.m - z_target);
    if (dlogits_scale == 0.0f) return;
    const float inv_sum = 1.0f / row.s;
    for (int k0 = int(threadIdx.x); k0 * W < ld; k0 += kInFlight * int(kThreads)) {
        // Only this thread read these columns, and wrote their cache, in the first sweep: no
        // barrier needed.
        load_batch<T, true>(p, n, z, cache, cached, k0, V);
        with_constant(whole<W>(n), [&](auto all_whole) {
            constexpr bool kWhole = decltype(all_whole)::value; // every chunk inside V and ld
            SHARDLAB_UNROLL
            for (int b = 0; b < kInFlight; ++b) {
                const int c0 = (k0 + b * int(kThreads)) * W;
                if (!kWhole && c0 >= ld) break;
                float f[W];
                unpack(f, p[b]);
                chunk_gradient(f, kWhole ? W : n[b], c0, target, row, inv_sum, dlogits_scale);
                store_chunk(z, c0, ld, f);
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
// The chunks of a row of V columns of T that the kernel keeps in shared memory: as many as
// leave room for two blocks an SM (each block's 1 KiB reserve and its static 64 B beside them;
// an SM has the opt-in plus one reserve), so that 16 warps an SM, 8 chunks in flight each, hide
// the first sweep's latency. An H100's 115,648 B hold 7,228 chunks: a 16-bit row of 57,824
// columns (GPT-2's 50,257 whole), in fp32 57% of GPT-2's.
template <typename T>
int cached_chunks(int V) {
    constexpr std::size_t kReserve = 1024, kStatic = 2 * kWarps * sizeof(float);
    const std::size_t half_sm = (shared_optin_bytes() + kReserve) / 2;
    const std::size_t per_block = half_sm > kReserve + kStatic ? half_sm - kReserve - kStatic : 0;
    const std::size_t chunks = blocks_for(std::size_t(V), Packed<T>::size);
    return int(std::min(chunks, per_block / sizeof(Packed<T>)));
}
} // namespace

void cross_entropy(cudaStream_t s, void* logits, const std::uint16_t* targets, int N, int V, int ld,
                   float dlogits_scale, double* row_losses, double* loss, DType t) {
    if (N > 0)
        dispatch(t, [&](auto tag) {
            using T = typename decltype(tag)::type;
            const int cached = cached_chunks<T>(V);
            launch_with_shared("cross_entropy_rows", cross_entropy_rows_kernel<T>, unsigned(N),
                               kThreads, cached * sizeof(Packed<T>), s, static_cast<T*>(logits),
                               targets, V, ld, dlogits_scale, row_losses, cached);
        });
    launch("cross_entropy_mean", mean_kernel, 1, kThreads, 0, s, row_losses, N, loss);
}

} // namespace shardlab::cuda
