// Flash attention (FlashAttention-2's scheme) in the style of attention.cpp: forward takes one
// (batch, query head) pair per OpenMP iteration, backward one (batch, kv head) pair (the whole
// group of query heads that share it, so that its dK, dV are summed on one thread in head order: no
// atomics, no reduction across threads); q, k, v are copied once into fp32 (double for double)
// rows, and the work done in query tiles of kRows x key tiles of kCols with small single-threaded
// GEMMs on the backend's fp32 library (tile_gemm.h). Causal: a query tile needs only the
// key tiles up to its last row, so tiles above the diagonal are never computed. Forward keeps a
// running max m and sum l per row and rescales the output tile as larger scores arrive (the online
// softmax); it stores out and lse = m + log l only. Backward recomputes each probability tile as
// exp(S - lse) and accumulates dQ, dK, dV in per-pair fp32 buffers. Every sum runs in a fixed order
// on one thread, so the bits do not depend on the thread count. Per-thread scratch is O(T * hd +
// kRows * kCols), never T x T.
#include "model/kernels/cpu/flash_attention.h"

#include "model/kernels/cpu/attention_heads.h"
#include "model/kernels/cpu/target_clones.h"
#include "model/kernels/cpu/vec_math.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
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

// Online softmax for one row of a score tile s[0 .. cols) (already scaled), of which the first n
// are visible: updates the running max m and sum l, turns s into exp(s - m_new) (zeros for the
// masked tail, exactly), and returns the factor exp(m_old - m_new) the row's output is rescaled by.
template <typename A>
SHARDLAB_TARGET_CLONES A online_softmax_row(A* __restrict s, int n, int cols, A& m, A& l) {
    A mx = m;
    for (int j = 0; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
    // m starts at -inf; exp(-inf - finite) is 0 in double and ~1e-38 via vexp's clamp in fp32,
    // either way multiplying l = 0 and a zero output row.
    const A alpha = vexp(m - mx);
    A sum = 0;
    for (int j = 0; j < n; ++j) {
        s[j] = vexp(s[j] - mx);
        sum += s[j];
    }
    for (int j = n; j < cols; ++j) s[j] = 0;
    m = mx;
    l = l * alpha + sum;
    return alpha;
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

template <typename A>
struct FlashBuffers {
    std::vector<A> q, k, v, o, s, p, m, l;
    std::vector<std::byte> scratch; // the tile products' (tile_gemm.h)
    FlashBuffers(int T_, int hd)
        : q(std::size_t(T_) * hd), k(q.size()), v(q.size()), o(q.size()),
          s(std::size_t(kRows) * kCols), p(s.size()), m(kRows), l(kRows) {}
};
// One query head's share of backward, on the buffers of w (q, k, v loaded; o holding dO): adds its
// dQ into dq and its dK, dV into dk, dv ([T_, hd] each), tile by tile in a fixed order.
template <typename A>
void head_backward(const TileGemm& tiles, FlashBuffers<A>& w, A* dq, A* dk, A* dv, const A* D,
                   const A* head_lse, int T_, int hd, A scale) {
    for (int i0 = 0; i0 < T_; i0 += kRows) {
        const int rows = std::min(kRows, T_ - i0), i1 = i0 + rows;
        const A* qt = w.q.data() + std::size_t(i0) * hd;
        const A* go = w.o.data() + std::size_t(i0) * hd;
        for (int j0 = 0; j0 < i1; j0 += kCols) {
            const int cols = std::min(kCols, i1 - j0);
            const A* kt = w.k.data() + std::size_t(j0) * hd;
            const A* vt = w.v.data() + std::size_t(j0) * hd;
            // S = scale * Q_tile K_tile^T; dP = dO_tile V_tile^T
            tiles(false, true, rows, cols, hd, float(scale), qt, hd, kt, hd, 0.0f, w.s.data(), cols,
                  w.scratch);
            tiles(false, true, rows, cols, hd, 1.0f, go, hd, vt, hd, 0.0f, w.p.data(), cols,
                  w.scratch);
            for (int r = 0; r < rows; ++r)
                grad_scores_row(w.s.data() + std::size_t(r) * cols,
                                w.p.data() + std::size_t(r) * cols, visible(i0 + r, j0, cols), cols,
                                head_lse[i0 + r], D[i0 + r], scale);
            // dQ_tile += dS K_tile; dK_tile += dS^T Q_tile; dV_tile += P^T dO_tile.
            tiles(false, false, rows, hd, cols, 1.0f, w.p.data(), cols, kt, hd, 1.0f,
                  dq + std::size_t(i0) * hd, hd, w.scratch);
            tiles(true, false, cols, hd, rows, 1.0f, w.p.data(), cols, qt, hd, 1.0f,
                  dk + std::size_t(j0) * hd, hd, w.scratch);
            tiles(true, false, cols, hd, rows, 1.0f, w.s.data(), cols, go, hd, 1.0f,
                  dv + std::size_t(j0) * hd, hd, w.scratch);
        }
    }
}
} // namespace

template <typename T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* qkv, int B, int T_, int C, int H,
                             int Hkv, const TileGemm& tiles) {
    using A = acc_t<T>;
    const int hd = C / H;
    const QkvLayout at{H, Hkv, hd};
    const float scale = float(1 / std::sqrt(double(hd)));
#pragma omp parallel
    {
        FlashBuffers<A> w(T_, hd); // o: the output tile being accumulated (kRows x hd used)
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h) {
                const T* rows = qkv + std::size_t(b) * T_ * at.row();
                load_head(rows, at.row(), at.q_col(h), T_, hd, w.q.data());
                load_head(rows, at.row(), at.k_col(at.kv_of(h)), T_, hd, w.k.data());
                load_head(rows, at.row(), at.v_col(at.kv_of(h)), T_, hd, w.v.data());
                A* head_lse = lse + (std::size_t(b) * H + h) * T_;
                for (int i0 = 0; i0 < T_; i0 += kRows) {
                    const int rows = std::min(kRows, T_ - i0), i1 = i0 + rows;
                    std::fill(w.m.begin(), w.m.end(), -std::numeric_limits<A>::infinity());
                    std::fill(w.l.begin(), w.l.end(), A(0));
                    std::fill(w.o.begin(), w.o.begin() + std::size_t(rows) * hd, A(0));
                    for (int j0 = 0; j0 < i1; j0 += kCols) {
                        const int cols = std::min(kCols, i1 - j0);
                        // S = scale * Q_tile K_tile^T
                        tiles(false, true, rows, cols, hd, scale, w.q.data() + std::size_t(i0) * hd,
                              hd, w.k.data() + std::size_t(j0) * hd, hd, 0.0f, w.s.data(), cols,
                              w.scratch);
                        for (int r = 0; r < rows; ++r) {
                            const A alpha =
                                online_softmax_row(w.s.data() + std::size_t(r) * cols,
                                                   visible(i0 + r, j0, cols), cols, w.m[r], w.l[r]);
                            A* o = w.o.data() + std::size_t(r) * hd;
                            for (int e = 0; e < hd; ++e) o[e] *= alpha;
                        }
                        // O_tile += P V_tile (the masked probabilities are exact zeros)
                        tiles(false, false, rows, hd, cols, 1.0f, w.s.data(), cols,
                              w.v.data() + std::size_t(j0) * hd, hd, 1.0f, w.o.data(), hd,
                              w.scratch);
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

template <typename T>
void flash_attention_backward(T* dqkv, const T* dout, const T* qkv, const T* out,
                              const acc_t<T>* lse, int B, int T_, int C, int H, int Hkv,
                              const TileGemm& tiles) {
    using A = acc_t<T>;
    const int hd = C / H;
    const QkvLayout at{H, Hkv, hd};
    const A scale = A(float(1 / std::sqrt(double(hd)))); // forward's scale, exactly
#pragma omp parallel
    {
        FlashBuffers<A> w(T_, hd); // o holds dO; s the scores, then P; p holds dP, then dS
        std::vector<A> dq(w.q.size()), dk(w.q.size()), dv(w.q.size()),
            D(static_cast<std::size_t>(T_));
        // One kv head and its group of query heads per iteration: dK and dV accumulate over the
        // group's heads in order, then the key tiles' order within each, all on this thread.
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b)
            for (int g = 0; g < Hkv; ++g) {
                const T* rows = qkv + std::size_t(b) * T_ * at.row();
                T* drows = dqkv + std::size_t(b) * T_ * at.row();
                load_head(rows, at.row(), at.k_col(g), T_, hd, w.k.data());
                load_head(rows, at.row(), at.v_col(g), T_, hd, w.v.data());
                std::fill(dk.begin(), dk.end(), A(0));
                std::fill(dv.begin(), dv.end(), A(0));
                for (int h = g * at.group(); h < (g + 1) * at.group(); ++h) {
                    load_head(rows, at.row(), at.q_col(h), T_, hd, w.q.data());
                    load_head(dout + std::size_t(b) * T_ * C, std::size_t(C), h * hd, T_, hd,
                              w.o.data());
                    // D_i = rowsum(dO_i * O_i) = sum_j P_ij dP_ij, from the out forward stored
                    // (rounded to T), as FlashAttention-2 does: it is the output the loss saw, and
                    // the exact one differs by one rounding of O (relative 2^-9 in bf16), the same
                    // order as the probabilities the materialising path stores in T.
                    for (int t = 0; t < T_; ++t) {
                        const T* y = out + (std::size_t(b) * T_ + t) * C + h * hd;
                        const A* go = w.o.data() + std::size_t(t) * hd;
                        A d = 0;
                        for (int e = 0; e < hd; ++e) d += go[e] * to_acc(y[e]);
                        D[t] = d;
                    }
                    std::fill(dq.begin(), dq.end(), A(0));
                    head_backward(tiles, w, dq.data(), dk.data(), dv.data(), D.data(),
                                  lse + (std::size_t(b) * H + h) * T_, T_, hd, scale);
                    store_head(drows, at.row(), at.q_col(h), T_, hd, dq.data());
                }
                store_head(drows, at.row(), at.k_col(g), T_, hd, dk.data());
                store_head(drows, at.row(), at.v_col(g), T_, hd, dv.data());
            }
    }
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void flash_attention_forward<T>(T*, acc_t<T>*, const T*, int, int, int, int, int,     \
                                             const TileGemm&);                                     \
    template void flash_attention_backward<T>(T*, const T*, const T*, const T*, const acc_t<T>*,   \
                                              int, int, int, int, int, const TileGemm&);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
