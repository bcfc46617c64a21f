// Token + position embedding. Forward: one block per output row, in 16-byte chunks. Backward
// without atomics: the positions are sorted by token, stably (each token's positions in
// increasing order), by a sort that runs on the whole device — each tile of kSortTile positions
// sorted in its block (bitonic, in shared memory), then every position's place found by binary
// searches of the other tiles (a merge by ranks) — and each distinct token's dwte row is summed by
// one block, in that order: the CPU's algorithm, so the same bits. Each position row of dwpe is
// summed by one thread per column over the batch, in batch order. No step of it is serial in the
// number of positions; a run's sum is serial in the run's length (position order: the CPU's
// bits), finding its end is logarithmic.
// A null wpe / dwpe is no position table (Llama): out = wte[token], no dwpe.
#include "core/cuda/element.h"
#include "core/cuda/launch.h"
#include "core/cuda/unroll.h"
#include "model/kernels/cuda/kernels.h"
#include "model/kernels/cuda/row_chunks.h"

namespace shardlab::cuda {

namespace {
constexpr unsigned kThreads = 256;
// Positions per sorting tile: a key is (token << kTileBits) | index in the tile, below 2^26 for
// 16-bit tokens, unique, so sorting keys sorts by token and then by position.
constexpr int kTileBits = 10, kSortTile = 1 << kTileBits;
constexpr unsigned kNoKey = 0xffffffffu; // pads the last tile; sorts after every key

// One block per output row, its threads taking the row's chunks of W columns (16-byte loads and
// stores where aligned: row_chunks.h): no division per element (the former one thread per
// element divided 64-bit indices by C and T: 67 us a GPT-2 step on the H200, for 50 MB of
// traffic). As before, wte + wpe is rounded once, and without positions the row is copied as
// stored.
template <typename T>
__global__ void embedding_forward_kernel(T* out, const std::uint16_t* tokens, const T* wte,
                                         const T* wpe, int T_, int C) {
    constexpr int W = Packed<T>::size;
    const int bt = int(blockIdx.x);
    const T* w_row = wte + std::size_t(tokens[bt]) * C;
    const T* p_row = wpe ? wpe + std::size_t(bt % T_) * C : nullptr;
    T* o_row = out + std::size_t(bt) * C;
    for (int c0 = int(threadIdx.x) * W; c0 < C; c0 += int(blockDim.x) * W) {
        if (!p_row) {
            copy_chunk(o_row, w_row, c0, C);
            continue;
        }
        float w[W], p[W];
        load_chunk(w, w_row, c0, C);
        load_chunk(p, p_row, c0, C);
        for (int e = 0; e < W; ++e) w[e] += p[e];
        store_chunk(o_row, c0, C, w);
    }
}

// One block per tile: its keys sorted ascending into keys [tile * kSortTile ..) (the valid ones).
__global__ void sort_tile_kernel(unsigned* keys, const std::uint16_t* tokens, int N) {
    __shared__ unsigned s[kSortTile];
    const int base = int(blockIdx.x) * kSortTile, tid = int(threadIdx.x), nt = int(blockDim.x);
    for (int i = tid; i < kSortTile; i += nt)
        s[i] = base + i < N ? (unsigned(tokens[base + i]) << kTileBits) | unsigned(i) : kNoKey;
    __syncthreads();
    for (int k = 2; k <= kSortTile; k *= 2)
        for (int j = k / 2; j > 0; j /= 2) {
            for (int i = tid; i < kSortTile; i += nt) {
                const int other = i ^ j;
                if (other <= i) continue;
                const bool ascending = (i & k) == 0;
                const unsigned a = s[i], b = s[other];
                if ((a > b) == ascending) s[i] = b, s[other] = a;
            }
            __syncthreads();
        }
    for (int i = tid; i < kSortTile && base + i < N; i += nt) keys[base + i] = s[i];
}

// How many keys of the sorted tile keys [0, len) have a token below `token`.
__device__ int tokens_below(const unsigned* keys, int len, unsigned token) {
    const unsigned bound = token << kTileBits;
    int lo = 0, hi = len;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (keys[mid] < bound)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// Each position's place in the stable order: the positions of its tile before it in the tile's
// order, plus, in every earlier tile, those of a token up to its own, and in every later tile,
// those of a smaller token. order [N]: the positions sorted by token, then position.
__global__ void place_by_rank_kernel(int* order, const unsigned* keys, int N) {
    const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= N) return;
    const int tile = i / kSortTile, tiles = (N + kSortTile - 1) / kSortTile;
    const unsigned key = keys[i], token = key >> kTileBits;
    int place = i - tile * kSortTile;
    for (int j = 0; j < tiles; ++j) {
        if (j == tile) continue;
        const int len = min(kSortTile, N - j * kSortTile);
        place += tokens_below(keys + std::size_t(j) * kSortTile, len, j < tile ? token + 1 : token);
    }
    order[place] = tile * kSortTile + int(key & (kSortTile - 1));
}

// Rows whose loads are in flight at once. A frequent token's run (hundreds of positions in real
// text) is summed by one block in position order; issuing kRows rows' loads before their adds
// keeps that from being one dependent load after another.
constexpr int kRows = 8;              // unrolled (SHARDLAB_UNROLL): the rows stay in registers
constexpr unsigned kWteThreads = 128; // 16-byte chunks: GPT-2's 768 bf16 columns are 96 of them

// The end of the run of `token` that starts at `begin` in the sorted order. Tokens only grow along
// the order, so "still the run" is true up to the end and false after it: a galloping search
// (probes at begin + 1, 2, 4, ...) then a binary one, O(log length) dependent loads. A frequent
// token's run is hundreds long in real text (a traced GPT-2 step on the H200 spent 2.2 ms, 100x
// the op's floor, here), and stepping through it one position at a time was a chain of dependent
// loads that long.
__device__ int run_end(const std::uint16_t* tokens, const int* order, int N, int begin,
                       unsigned token) {
    int lo = begin + 1, hi = N; // the run covers [begin, lo); its end is in [lo, hi]
    for (int step = 1; begin + step < N; step *= 2) {
        if (tokens[order[begin + step]] != token) {
            hi = begin + step;
            break;
        }
        lo = begin + step + 1;
    }
    while (lo < hi) { // the first position in [lo, hi) past the run, or hi
        const int mid = lo + (hi - lo) / 2;
        if (tokens[order[mid]] == token)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// row += the run's dout rows order[begin .. end), per column in position order (fp32), rounded
// once; each thread takes 16-byte chunks of W columns. kVector: every chunk is whole and aligned.
template <bool kVector, typename T>
__device__ void sum_run(T* row, const T* dout, const int* order, int begin, int end, int C) {
    constexpr int W = Packed<T>::size;
    for (int c0 = int(threadIdx.x) * W; c0 < C; c0 += int(blockDim.x) * W) {
        float acc[W] = {};
        for (int k = begin; k < end; k += kRows) {
            // Loaded first, added after, in position order. A row past the run loads the run's
            // first row (real, never added), so no load waits behind a branch.
            float v[kRows][W];
            SHARDLAB_UNROLL
            for (int r = 0; r < kRows; ++r) {
                const T* src = dout + std::size_t(order[k + r < end ? k + r : begin]) * C;
                if constexpr (kVector)
                    load_whole_chunk(v[r], src, c0);
                else
                    load_chunk(v[r], src, c0, C);
            }
            SHARDLAB_UNROLL
            for (int r = 0; r < kRows; ++r)
                if (k + r < end)
                    for (int e = 0; e < W; ++e) acc[e] += v[r][e];
        }
        float sum[W];
        load_chunk(sum, row, c0, C);
        for (int e = 0; e < W; ++e) sum[e] += acc[e];
        store_chunk(row, c0, C, sum);
    }
}

// Block k of N: when order[k] starts a run of one token, that token's dwte row += the run's dout
// rows, summed per column in position order (fp32), rounded once. A thread takes 16-byte chunks
// of the row.
template <typename T>
__global__ void embedding_backward_wte_kernel(T* dwte, const T* dout, const std::uint16_t* tokens,
                                              const int* order, int N, int C) {
    constexpr int W = Packed<T>::size;
    const int begin = int(blockIdx.x);
    const unsigned token = tokens[order[begin]];
    if (begin > 0 && tokens[order[begin - 1]] == token) return; // not the run's first
    const int end = run_end(tokens, order, N, begin, token);
    T* row = dwte + std::size_t(token) * C;
    // A 16-byte load per chunk of every dout row when dout is aligned and C is whole chunks
    // (GPT-2's 768), else chunk by chunk as row_chunks.h does: one branch for the kernel.
    if (aligned16(dout) && C % W == 0)
        sum_run<true>(row, dout, order, begin, end, C);
    else
        sum_run<false>(row, dout, order, begin, end, C);
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
    if (B * T == 0 || C == 0) return;
    dispatch(t, [&](auto tag) {
        using E = typename decltype(tag)::type;
        // 128 threads: GPT-2's 96 chunks of a bf16 row in one pass, a Llama's 512 in four.
        launch("embedding_forward", embedding_forward_kernel<E>, unsigned(B * T), 128, 0, s,
               static_cast<E*>(out), tokens, static_cast<const E*>(wte), static_cast<const E*>(wpe),
               T, C);
    });
}

std::size_t embedding_backward_scratch(int positions) {
    return 2 * std::size_t(positions) * sizeof(int);
}

void embedding_backward(cudaStream_t s, void* dwte, void* dwpe, const void* dout,
                        const std::uint16_t* tokens, int B, int T, int C, DType t, void* scratch) {
    const int N = B * T;
    if (N == 0) return;
    auto* keys = static_cast<unsigned*>(scratch);
    int* order = static_cast<int*>(scratch) + N;
    launch("embedding_sort_tiles", sort_tile_kernel, blocks_for(std::size_t(N), kSortTile), 512, 0,
           s, keys, tokens, N);
    launch("embedding_place_by_rank", place_by_rank_kernel, blocks_for(std::size_t(N), kThreads),
           kThreads, 0, s, order, keys, N);
    dispatch(t, [&](auto tag) {
        using E = typename decltype(tag)::type;
        launch("embedding_backward_wte", embedding_backward_wte_kernel<E>, unsigned(N), kWteThreads,
               0, s, static_cast<E*>(dwte), static_cast<const E*>(dout), tokens, order, N, C);
        if (dwpe) // none without a position table
            launch("embedding_backward_wpe", embedding_backward_wpe_kernel<E>,
                   dim3(blocks_for(std::size_t(C), 128), unsigned(T)), 128, 0, s,
                   static_cast<E*>(dwpe), static_cast<const E*>(dout), B, T, C);
    });
}

} // namespace shardlab::cuda
