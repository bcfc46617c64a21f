// Flash attention (FlashAttention-2's scheme) in the style of attention.cpp: forward takes one
// (batch, query head) pair per OpenMP iteration, backward one (batch, kv head) pair (the whole
// group of query heads that share it, so that its dK, dV are summed on one thread in head order: no
// atomics, no reduction across threads), and the work is done in query tiles of kRows x key tiles
// of kCols with small single-threaded GEMMs on the backend's library (tile_gemm.h). Their operands:
// each head's q, k, v (and dO) copied once into dense rows, in fp32 (double for double); or, for
// bf16 where the library multiplies bf16 as it is (oneDNN on AVX512-BF16), in bf16 as stored, the
// probability and dS tiles rounded to bf16 before they enter a product, as the CUDA tensor-core
// kernels do (fp32 sums either way). Dense because oneDNN's brgemm kernels take only tiles whose
// rows are contiguous: read in place from the qkv rows, the products fell to gemm:jit, 21 GFLOP/s
// for Q K^T on a Xeon with AMX where the dense tile runs 560 (docs/DECISIONS.md). Causal: a query
// tile needs only the key tiles up to its last row, so tiles above the diagonal are never computed.
// Forward keeps a running max m and sum l per row and rescales the output tile as larger scores
// arrive (the online softmax); it stores out and lse = m + log l only. Backward recomputes each
// probability tile as exp(S - lse) and accumulates dQ, dK, dV in per-pair fp32 buffers. Every sum
// runs in a fixed order on one thread, so the bits do not depend on the thread count. Per-thread
// scratch is O(T * hd + kRows * kCols), never T x T.
#include "model/kernels/cpu/flash_attention.h"

#include "core/target_clones.h"
#include "model/kernels/cpu/attention_heads.h"
#include "model/kernels/cpu/row_groups.h"
#include "model/kernels/cpu/vec_math.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

namespace shardlab::cpu {

namespace {
// Query rows per tile: as in attention.cpp. Key columns per tile: 256 keeps the score and
// probability tiles (2 x 64 x 256 fp32 = 128 KiB) in a Zen 3 core's 512 KiB L2 while making each
// GEMM big enough that OpenBLAS's per-call cost and the rescaling of the output tile (once per key
// tile) stay small. A multiple of kRows, so the last key tile of a query tile starts at or before
// the query tile's first row: no row of a computed tile is entirely masked.
constexpr int kRows = 64;
constexpr int kCols = 256;
static_assert(kCols % kRows == 0);

// Keys j0 + 0 .. j0 + n of a tile that query row i may see (causal), n clamped to [0, cols].
inline int visible(int i, int j0, int cols) {
    return std::clamp(i + 1 - j0, 0, cols);
}

// Online softmax for R rows of a score tile s (already scaled; row r at s + r * cols), of which the
// first n[r] keys are visible: updates each row's running max m and sum l, turns s into
// exp(s - m_new) (zeros for the masked tail, exactly), and sets alpha[r] = exp(m_old - m_new), the
// factor the row's output is rescaled by. Each row's max and sum run over its keys in order, as
// for a row alone; the R rows' chains interleave, where one row waited on every add's latency.
template <int R, typename A>
SHARDLAB_TARGET_CLONES void online_softmax_rows(A* __restrict s, const int* n, int cols, A* m, A* l,
                                                A* alpha) {
    A mx[R], sum[R] = {};
    for (int r = 0; r < R; ++r) { // the masked tail at -inf: never the max
        mx[r] = m[r];
        for (int j = n[r]; j < cols; ++j) s[r * cols + j] = -std::numeric_limits<A>::infinity();
    }
    for (int j = 0; j < cols; ++j)
        for (int r = 0; r < R; ++r) mx[r] = s[r * cols + j] > mx[r] ? s[r * cols + j] : mx[r];
    for (int r = 0; r < R; ++r) {
        // m starts at -inf; exp(-inf - finite) is 0 in double and ~1e-38 via vexp's clamp in
        // fp32, either way multiplying l = 0 and a zero output row.
        alpha[r] = vexp(m[r] - mx[r]);
        A* row = s + r * cols;
        for (int j = 0; j < n[r]; ++j) row[j] = vexp(row[j] - mx[r]);
        for (int j = n[r]; j < cols; ++j) row[j] = 0;
    }
    for (int j = 0; j < cols; ++j) // + 0 past a row's keys: the sum of its visible ones
        for (int r = 0; r < R; ++r) sum[r] += s[r * cols + j];
    for (int r = 0; r < R; ++r) {
        m[r] = mx[r];
        l[r] = l[r] * alpha[r] + sum[r];
    }
}

// D[t] = rowsum(dO_t * O_t) for R rows (row t at d + t * ld, y + t * ld), each sum in index order,
// the rows' chains interleaved.
template <int R, typename T>
SHARDLAB_TARGET_CLONES void output_dots(acc_t<T>* __restrict D, const T* __restrict d,
                                        const T* __restrict y, std::size_t ld, int hd) {
    acc_t<T> sum[R] = {};
    for (int e = 0; e < hd; ++e)
        for (int t = 0; t < R; ++t) sum[t] += to_acc(d[t * ld + e]) * to_acc(y[t * ld + e]);
    for (int t = 0; t < R; ++t) D[t] = sum[t];
}

// Backward for one row of a tile: s holds the scaled scores, dp = dO V^T. On return s holds
// P = exp(s - lse) (masked tail 0) and dp holds dS = P (dP - D) * scale.
template <typename A>
SHARDLAB_TARGET_CLONES void grad_scores_row(A* __restrict s, A* __restrict dp, int n, int cols,
                                            A lse, A D, A scale) {
    for (int j = 0; j < n; ++j) {
        const A p = vexp(s[j] - lse);
        s[j] = p;
        dp[j] = p * (dp[j] - D) * scale;
    }
    for (int j = n; j < cols; ++j) s[j] = dp[j] = 0;
}

// A head's rows as the tile products read them: ld elements from one row to the next.
template <typename X>
struct Rows {
    const X* data;
    int ld;
    const X* at(int row) const { return data + std::size_t(row) * ld; }
};

// Scratch of one thread. X is the products' operand type: A; or bf16 multiplied as it is
// (tile_gemm.h), with the probability and dS tiles rounded to it (ps, pp) before they enter a
// product. q, k, v: one head's operands as dense rows (head_rows).
template <typename A, typename X>
struct FlashBuffers {
    static constexpr bool kRounds = !std::is_same_v<X, A>;
    std::vector<X> q, k, v;
    std::vector<A> o, s, p, m, l;
    std::vector<X> ps, pp;
    MatmulThreadState tile_state; // the tile products' (tile_gemm.h)
    FlashBuffers(int T_, int hd)
        : q(std::size_t(T_) * hd), k(q.size()), v(q.size()), o(std::size_t(kRows) * hd),
          s(std::size_t(kRows) * kCols), p(s.size()), m(kRows), l(kRows),
          ps(kRounds ? s.size() : 0), pp(ps.size()) {}
};

// Rows [T_, hd] at column col of base (row elements apart), copied into dense rows (ld hd) of the
// products' operand type: widened to the accumulation type, or bf16 as stored.
template <typename X, typename T>
Rows<X> head_rows(const T* base, std::size_t row, int col, int T_, int hd, std::vector<X>& copy) {
    if constexpr (std::is_same_v<X, T>)
        for (int t = 0; t < T_; ++t)
            std::copy_n(base + t * row + col, hd, copy.data() + std::size_t(t) * hd);
    else
        load_head(base, row, col, T_, hd, copy.data());
    return {copy.data(), hd};
}

template <typename X, typename A>
SHARDLAB_TARGET_CLONES void round_to(const A* __restrict src, X* __restrict dst, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = from_acc<X>(src[i]);
}

template <typename A>
SHARDLAB_TARGET_CLONES void scale_row(A* __restrict row, int n, A factor) {
    for (int e = 0; e < n; ++e) row[e] *= factor;
}

// A rows x cols tile (probabilities or dS) as a product's operand: itself, or rounded to X (the
// tensor-core kernels' rounding: flash_attention_wmma.h argues its cost).
template <typename X, typename A>
const X* tile_operand(const A* tile, std::vector<X>& rounded, int rows, int cols) {
    if constexpr (std::is_same_v<X, A>) {
        return tile;
    } else {
        round_to(tile, rounded.data(), std::size_t(rows) * cols);
        return rounded.data();
    }
}

// One query head's share of backward, on the buffers of w: adds its dQ into dq and its dK, dV into
// dk, dv ([T_, hd] each, dense), tile by tile in a fixed order.
template <typename A, typename X>
void head_backward(const TileGemm& tiles, FlashBuffers<A, X>& w, Rows<X> q, Rows<X> k, Rows<X> v,
                   Rows<X> dout, A* dq, A* dk, A* dv, const A* D, const A* head_lse, int T_, int hd,
                   A scale) {
    for (int i0 = 0; i0 < T_; i0 += kRows) {
        const int rows = std::min(kRows, T_ - i0), i1 = i0 + rows;
        const X* qt = q.at(i0);
        const X* go = dout.at(i0);
        for (int j0 = 0; j0 < i1; j0 += kCols) {
            const int cols = std::min(kCols, i1 - j0);
            const X* kt = k.at(j0);
            const X* vt = v.at(j0);
            // S = scale * Q_tile K_tile^T; dP = dO_tile V_tile^T
            tiles(false, true, rows, cols, hd, float(scale), qt, q.ld, kt, k.ld, 0.0f, w.s.data(),
                  cols, w.tile_state);
            tiles(false, true, rows, cols, hd, 1.0f, go, dout.ld, vt, v.ld, 0.0f, w.p.data(), cols,
                  w.tile_state);
            for (int r = 0; r < rows; ++r)
                grad_scores_row(w.s.data() + std::size_t(r) * cols,
                                w.p.data() + std::size_t(r) * cols, visible(i0 + r, j0, cols), cols,
                                head_lse[i0 + r], D[i0 + r], scale);
            const X* P = tile_operand(w.s.data(), w.ps, rows, cols);
            const X* dS = tile_operand(w.p.data(), w.pp, rows, cols);
            // dQ_tile += dS K_tile; dK_tile += dS^T Q_tile; dV_tile += P^T dO_tile.
            tiles(false, false, rows, hd, cols, 1.0f, dS, cols, kt, k.ld, 1.0f,
                  dq + std::size_t(i0) * hd, hd, w.tile_state);
            tiles(true, false, cols, hd, rows, 1.0f, dS, cols, qt, q.ld, 1.0f,
                  dk + std::size_t(j0) * hd, hd, w.tile_state);
            tiles(true, false, cols, hd, rows, 1.0f, P, cols, go, dout.ld, 1.0f,
                  dv + std::size_t(j0) * hd, hd, w.tile_state);
        }
    }
}

template <typename T, typename X>
void forward(T* out, acc_t<T>* lse, const T* qkv, int B, int T_, int C, int H, int Hkv,
             const TileGemm& tiles) {
    using A = acc_t<T>;
    const int hd = C / H;
    const QkvLayout at{H, Hkv, hd};
    const float scale = softmax_scale(hd);
#pragma omp parallel
    {
        FlashBuffers<A, X> w(T_, hd); // o: the output tile being accumulated
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h) {
                const T* base = qkv + std::size_t(b) * T_ * at.row();
                const Rows<X> q = head_rows<X>(base, at.row(), at.q_col(h), T_, hd, w.q);
                const Rows<X> k = head_rows<X>(base, at.row(), at.k_col(at.kv_of(h)), T_, hd, w.k);
                const Rows<X> v = head_rows<X>(base, at.row(), at.v_col(at.kv_of(h)), T_, hd, w.v);
                A* head_lse = lse + (std::size_t(b) * H + h) * T_;
                for (int i0 = 0; i0 < T_; i0 += kRows) {
                    const int rows = std::min(kRows, T_ - i0), i1 = i0 + rows;
                    std::fill(w.m.begin(), w.m.end(), -std::numeric_limits<A>::infinity());
                    std::fill(w.l.begin(), w.l.end(), A(0));
                    std::fill(w.o.begin(), w.o.begin() + std::size_t(rows) * hd, A(0));
                    for (int j0 = 0; j0 < i1; j0 += kCols) {
                        const int cols = std::min(kCols, i1 - j0);
                        // S = scale * Q_tile K_tile^T
                        tiles(false, true, rows, cols, hd, scale, q.at(i0), q.ld, k.at(j0), k.ld,
                              0.0f, w.s.data(), cols, w.tile_state);
                        int n[kRows];
                        A alpha[kRows];
                        for (int r = 0; r < rows; ++r) n[r] = visible(i0 + r, j0, cols);
                        for_row_groups_here(rows, [&]<int R>(int r) {
                            online_softmax_rows<R>(w.s.data() + std::size_t(r) * cols, n + r, cols,
                                                   w.m.data() + r, w.l.data() + r, alpha + r);
                        });
                        for (int r = 0; r < rows; ++r)
                            scale_row(w.o.data() + std::size_t(r) * hd, hd, alpha[r]);
                        // O_tile += P V_tile (the masked probabilities are exact zeros); l was
                        // summed from P before any rounding.
                        tiles(false, false, rows, hd, cols, 1.0f,
                              tile_operand(w.s.data(), w.ps, rows, cols), cols, v.at(j0), v.ld,
                              1.0f, w.o.data(), hd, w.tile_state);
                    }
                    for (int r = 0; r < rows; ++r) {
                        const A inv = A(1) / w.l[r];
                        T* y = out + (std::size_t(b) * T_ + i0 + r) * C + h * hd;
                        for (int e = 0; e < hd; ++e)
                            y[e] = from_acc<T>(w.o[std::size_t(r) * hd + e] * inv);
                        head_lse[i0 + r] = w.m[r] + std::log(w.l[r]);
                    }
                }
            }
    }
}

template <typename T, typename X>
void backward(T* dqkv, const T* dout, const T* qkv, const T* out, const acc_t<T>* lse, int B,
              int T_, int C, int H, int Hkv, const TileGemm& tiles) {
    using A = acc_t<T>;
    const int hd = C / H;
    const QkvLayout at{H, Hkv, hd};
    const A scale = A(softmax_scale(hd)); // the forward's, exactly
    const std::size_t head = std::size_t(T_) * hd;
#pragma omp parallel
    {
        FlashBuffers<A, X> w(T_, hd); // s: the scores, then P; p: dP, then dS
        std::vector<A> dq(head), dk(head), dv(head), D(static_cast<std::size_t>(T_));
        std::vector<X> dout_rows(head); // dO's dense rows (head_rows)
        // One kv head and its group of query heads per iteration: dK and dV accumulate over the
        // group's heads in order, then the key tiles' order within each, all on this thread.
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b)
            for (int g = 0; g < Hkv; ++g) {
                const T* base = qkv + std::size_t(b) * T_ * at.row();
                const T* dbase = dout + std::size_t(b) * T_ * C;
                T* drows = dqkv + std::size_t(b) * T_ * at.row();
                const Rows<X> k = head_rows<X>(base, at.row(), at.k_col(g), T_, hd, w.k);
                const Rows<X> v = head_rows<X>(base, at.row(), at.v_col(g), T_, hd, w.v);
                std::fill(dk.begin(), dk.end(), A(0));
                std::fill(dv.begin(), dv.end(), A(0));
                for (int h = g * at.group(); h < (g + 1) * at.group(); ++h) {
                    const Rows<X> q = head_rows<X>(base, at.row(), at.q_col(h), T_, hd, w.q);
                    const Rows<X> go =
                        head_rows<X>(dbase, std::size_t(C), h * hd, T_, hd, dout_rows);
                    // D_i = rowsum(dO_i * O_i) = sum_j P_ij dP_ij, from the out forward stored
                    // (rounded to T), as FlashAttention-2 does: it is the output the loss saw, and
                    // the exact one differs by one rounding of O (relative 2^-9 in bf16), the same
                    // order as the probabilities the materialising path stores in T.
                    for_row_groups_here(T_, [&]<int R>(int t) {
                        const std::size_t at = std::size_t(t) * C + h * hd;
                        output_dots<R>(D.data() + t, dbase + at, out + std::size_t(b) * T_ * C + at,
                                       std::size_t(C), hd);
                    });
                    std::fill(dq.begin(), dq.end(), A(0));
                    head_backward(tiles, w, q, k, v, go, dq.data(), dk.data(), dv.data(), D.data(),
                                  lse + (std::size_t(b) * H + h) * T_, T_, hd, scale);
                    store_head(drows, at.row(), at.q_col(h), T_, hd, dq.data());
                }
                store_head(drows, at.row(), at.k_col(g), T_, hd, dk.data());
                store_head(drows, at.row(), at.v_col(g), T_, hd, dv.data());
            }
    }
}
} // namespace

// bf16 is multiplied as it is where the tile products take bf16 operands; everything else in the
// accumulation type.
template <typename T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* qkv, int B, int T_, int C, int H,
                             int Hkv, const TileGemm& tiles) {
    if constexpr (std::is_same_v<T, bf16_t>)
        if (tiles.bf16_operands()) return forward<T, T>(out, lse, qkv, B, T_, C, H, Hkv, tiles);
    forward<T, acc_t<T>>(out, lse, qkv, B, T_, C, H, Hkv, tiles);
}

template <typename T>
void flash_attention_backward(T* dqkv, const T* dout, const T* qkv, const T* out,
                              const acc_t<T>* lse, int B, int T_, int C, int H, int Hkv,
                              const TileGemm& tiles) {
    if constexpr (std::is_same_v<T, bf16_t>)
        if (tiles.bf16_operands())
            return backward<T, T>(dqkv, dout, qkv, out, lse, B, T_, C, H, Hkv, tiles);
    backward<T, acc_t<T>>(dqkv, dout, qkv, out, lse, B, T_, C, H, Hkv, tiles);
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void flash_attention_forward<T>(T*, acc_t<T>*, const T*, int, int, int, int, int,     \
                                             const TileGemm&);                                     \
    template void flash_attention_backward<T>(T*, const T*, const T*, const T*, const acc_t<T>*,   \
                                              int, int, int, int, int, const TileGemm&);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
