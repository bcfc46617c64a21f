// Attention, one (batch, head) pair per OpenMP iteration, computed in tiles of kTile query rows
// with small single-threaded GEMMs on the backend's fp32 library (tile_gemm.h): a tile
// of rows i0 .. i1 needs only keys 0 .. i1 (causal), so the tiles skip most of the masked half.
// Each pair first copies its q, k, v into fp32 (or double) buffers (attention_heads.h). Every sum
// runs in a fixed order on one thread, so results do not depend on the thread count.
#include "model/kernels/cpu/attention.h"

#include "model/kernels/cpu/attention_heads.h"
#include "model/kernels/cpu/vec_math.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace shardlab::cpu {

namespace {
constexpr int kTile = 64; // query rows per tile: the scores of a tile stay in L2

// Row i of a tile: scores s[0 .. i] -> probabilities, stored (rounded) in a[0 .. T_), zeros above
// the diagonal; p[0 .. cols) receives them as stored, as backward will read them.
template <typename T, typename A>
void softmax_row(A* s, int i, int cols, int T_, T* a, A* p) {
    A maxv = s[0];
    for (int j = 1; j <= i; ++j) maxv = s[j] > maxv ? s[j] : maxv;
    for (int j = 0; j <= i; ++j) s[j] = vexp(s[j] - maxv);
    A sum = 0;
    for (int j = 0; j <= i; ++j) sum += s[j];
    for (int j = 0; j < T_; ++j) a[j] = from_acc<T>(j <= i ? s[j] / sum : A(0));
    for (int j = 0; j < cols; ++j) p[j] = to_acc(a[j]);
}

template <typename A>
struct HeadBuffers {
    std::vector<A> q, k, v, o, s, p;
    MatmulThreadState tile_state; // the tile products' (tile_gemm.h)
    HeadBuffers(int T_, int hd)
        : q(std::size_t(T_) * hd), k(q.size()), v(q.size()), o(q.size()),
          s(std::size_t(kTile) * T_), p(s.size()) {}
};
} // namespace

template <typename T>
void attention_forward(T* out, T* att, const T* qkv, int B, int T_, int C, int H,
                       const TileGemm& tiles) {
    using A = acc_t<T>;
    const int hd = C / H;
    const float scale = softmax_scale(hd);
#pragma omp parallel
    {
        HeadBuffers<A> w(T_, hd);
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h) {
                load_qkv_head(qkv, b, h, T_, C, hd, w.q.data(), w.k.data(), w.v.data());
                for (int i0 = 0; i0 < T_; i0 += kTile) {
                    const int rows = std::min(kTile, T_ - i0), cols = i0 + rows;
                    // S = scale * Q_tile K[0 .. cols)^T, then row-wise causal softmax.
                    tiles(false, true, rows, cols, hd, scale, w.q.data() + std::size_t(i0) * hd, hd,
                          w.k.data(), hd, 0.0f, w.s.data(), cols, w.tile_state);
                    for (int r = 0; r < rows; ++r) {
                        T* a = att + ((std::size_t(b) * H + h) * T_ + i0 + r) * T_;
                        softmax_row(w.s.data() + std::size_t(r) * cols, i0 + r, cols, T_, a,
                                    w.p.data() + std::size_t(r) * cols);
                    }
                    // O_tile = P V[0 .. cols): the masked probabilities are exact zeros.
                    tiles(false, false, rows, hd, cols, 1.0f, w.p.data(), cols, w.v.data(), hd,
                          0.0f, w.o.data(), hd, w.tile_state);
                    for (int r = 0; r < rows; ++r) {
                        T* y = out + (std::size_t(b) * T_ + i0 + r) * C + h * hd;
                        for (int e = 0; e < hd; ++e)
                            y[e] = from_acc<T>(w.o[std::size_t(r) * hd + e]);
                    }
                }
            }
    }
}

template <typename T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, int B, int T_, int C,
                        int H, const TileGemm& tiles) {
    using A = acc_t<T>;
    const int hd = C / H;
    const A scale = A(softmax_scale(hd)); // the forward's, exactly (float64: see softmax_scale)
#pragma omp parallel
    {
        HeadBuffers<A> w(T_, hd); // o holds dO; s holds dP, then dS
        std::vector<A> dq(w.q.size()), dk(w.q.size()), dv(w.q.size());
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h) {
                load_qkv_head(qkv, b, h, T_, C, hd, w.q.data(), w.k.data(), w.v.data());
                load_head(dout + std::size_t(b) * T_ * C, std::size_t(C), h * hd, T_, hd,
                          w.o.data());
                std::fill(dk.begin(), dk.end(), A(0));
                std::fill(dv.begin(), dv.end(), A(0));
                for (int i0 = 0; i0 < T_; i0 += kTile) {
                    const int rows = std::min(kTile, T_ - i0), cols = i0 + rows;
                    const A* go = w.o.data() + std::size_t(i0) * hd;
                    const A* qt = w.q.data() + std::size_t(i0) * hd;
                    // dP = dO_tile V[0 .. cols)^T
                    tiles(false, true, rows, cols, hd, 1.0f, go, hd, w.v.data(), hd, 0.0f,
                          w.s.data(), cols, w.tile_state);
                    for (int r = 0; r < rows; ++r) { // dS = P (dP - sum_j P dP) * scale
                        const T* a = att + ((std::size_t(b) * H + h) * T_ + i0 + r) * T_;
                        A* p = w.p.data() + std::size_t(r) * cols;
                        A* ds = w.s.data() + std::size_t(r) * cols;
                        for (int j = 0; j < cols; ++j) p[j] = to_acc(a[j]);
                        A dot = 0;
                        for (int j = 0; j < cols; ++j) dot += p[j] * ds[j];
                        for (int j = 0; j < cols; ++j) ds[j] = p[j] * (ds[j] - dot) * scale;
                    }
                    // dQ_tile = dS K; dK += dS^T Q_tile; dV += P^T dO_tile.
                    tiles(false, false, rows, hd, cols, 1.0f, w.s.data(), cols, w.k.data(), hd,
                          0.0f, dq.data() + std::size_t(i0) * hd, hd, w.tile_state);
                    tiles(true, false, cols, hd, rows, 1.0f, w.s.data(), cols, qt, hd, 1.0f,
                          dk.data(), hd, w.tile_state);
                    tiles(true, false, cols, hd, rows, 1.0f, w.p.data(), cols, go, hd, 1.0f,
                          dv.data(), hd, w.tile_state);
                }
                store_dqkv_head(dqkv, b, h, T_, C, hd, dq.data(), dk.data(), dv.data());
            }
    }
}

#define SHARDLAB_INSTANTIATE(T)                                                                    \
    template void attention_forward<T>(T*, T*, const T*, int, int, int, int, const TileGemm&);     \
    template void attention_backward<T>(T*, const T*, const T*, const T*, int, int, int, int,      \
                                        const TileGemm&);
SHARDLAB_FOR_EACH_STORAGE_TYPE(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

} // namespace shardlab::cpu
