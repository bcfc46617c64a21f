// The CUDA backend's Ops against the CPU backend's, on the same random inputs (odd sizes, every
// storage dtype), both called through the Ops interface on their own streams. Where the CUDA
// kernel sums in the CPU's order the results are equal bit for bit (element-wise ops,
// conversions, embedding, bias and LayerNorm parameter gradients, AdamW); elsewhere the bound is
// argued per op from the precision (reduction order in fp32, one rounding to 16 bits). Runs on a
// GPU, or on the CPU under the SIMT emulator (-DSHARDLAB_CUDA=EMU); skipped, saying so, where
// neither is present.
#include "core/cuda/cuda_check.h"
#include "core/device_context.h"
#include "core/error.h"
#include "core/watched_stream.h"
#include "model/kernels/cuda/flash_attention_path.h"
#include "model/ops_cpu.h"
#include "model/ops_cuda.h"
#include "optim/adamw.h"
#include "tests/cuda_twin.h"

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <random>
#include <utility>
#include <vector>

#ifdef SHARDLAB_CUDA_EMU
#include <cuda_runtime.h> // the emulator's test support (emu::set_shared_optin)
#endif

using namespace shardlab;
using namespace shardlab::cuda_test;

namespace {
// |op(A)| |op(B)| in float64, row-major M x N: entry (m, n) is sum_k |A(m, k) B(k, n)|, summed in
// k order, the magnitude a product's accumulated rounding error is bounded by. op(A) is M x K,
// stored K x M when ta; op(B) is K x N, stored N x K when tb.
std::vector<double> abs_product(const float* a, bool ta, const float* b, bool tb, int M, int K,
                                int N) {
    std::vector<double> mag(std::size_t(M) * N);
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double s = 0;
            for (int k = 0; k < K; ++k) {
                const double av = a[ta ? std::size_t(k) * M + m : std::size_t(m) * K + k];
                const double bv = b[tb ? std::size_t(n) * K + k : std::size_t(k) * N + n];
                s += std::fabs(av * bv);
            }
            mag[std::size_t(m) * N + n] = s;
        }
    return mag;
}
} // namespace

// GEMM: both sides accumulate K products in fp32, in different orders, so each differs from the
// exact value by at most K u sum|a||b| (u = 2^-24), the two by twice that; a 16-bit result is then
// rounded once on each side, which may land on neighbouring values: one ulp of the output more.
// A GPU's cuBLAS may round a 16-bit product to C's type before adding beta C or the bias (seen on
// an H200, cuBLAS 13.1: gemm_epilogue.h): one ulp of the product more.
TEST(CudaOps, GemmMatchesTheCpuWithinTheAccumulationBound) {
    MAKE_TWIN(t);
    struct Case {
        int batch, M, N, K;
        bool bias;
    };
    for (const Case c : {Case{1, 13, 7, 19, false}, Case{1, 33, 65, 17, true},
                         Case{3, 5, 9, 11, false}, Case{1, 1, 1, 1, true}})
        for (DType dt : kAll)
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    SCOPED_TRACE(testing::Message() << dtype_name(dt) << " ta " << ta << " tb "
                                                    << tb << " M " << c.M << " batch " << c.batch);
                    const int B = c.batch, M = c.M, N = c.N, K = c.K;
                    const auto a = random_values(std::size_t(B) * M * K, 1);
                    const auto b = random_values(std::size_t(B) * K * N, 2);
                    const auto c0 = random_values(std::size_t(B) * M * N, 3);
                    const auto bias = random_values(std::size_t(N), 4);
                    const float alpha = 0.75f, beta = c.bias ? 0.0f : 0.5f;
                    const Shape sa =
                        B > 1 ? Shape{B, ta ? K : M, ta ? M : K} : Shape{ta ? K : M, ta ? M : K};
                    const Shape sb =
                        B > 1 ? Shape{B, tb ? N : K, tb ? K : N} : Shape{tb ? N : K, tb ? K : N};
                    const Shape sc = B > 1 ? Shape{B, M, N} : Shape{M, N};
                    std::vector<float> out[2];
                    std::vector<float> ha, hb; // the inputs as stored (rounded to dt)
                    for (int side = 0; side < 2; ++side) {
                        Side& x = side ? t.gpu : t.cpu;
                        const Tensor ta_ = x.make(a, dt, sa), tb_ = x.make(b, dt, sb),
                                     tc = x.make(c0, dt, sc), tbias = x.make(bias, dt, {N});
                        x.ops->gemm(x.s(), ta_, ta, tb_, tb, tc, alpha, beta,
                                    c.bias ? &tbias : nullptr);
                        out[side] = x.read(tc);
                        if (side == 0) ha = x.read(ta_), hb = x.read(tb_);
                    }
                    std::vector<double> bound(out[0].size());
                    for (int i = 0; i < B; ++i) {
                        const std::vector<double> mags =
                            abs_product(ha.data() + std::size_t(i) * M * K, ta,
                                        hb.data() + std::size_t(i) * K * N, tb, M, K, N);
                        for (int m = 0; m < M; ++m)
                            for (int n = 0; n < N; ++n) {
                                const double mag = mags[std::size_t(m) * N + n];
                                const std::size_t o = (std::size_t(i) * M + m) * N + n;
                                const double rest =
                                    c.bias ? std::fabs(bias[n]) : 0.5 * std::fabs(c0[o]);
                                bound[o] = 2.0 * (K + 2) * 0x1p-24 * (alpha * mag + rest) +
                                           rounding(dt, alpha * mag) + rounding(dt, out[0][o]);
                            }
                    }
                    expect_within(out[1], out[0], bound, "gemm");
                }
}

// Rows that fit one chunk are summed in the CPU's order: bit for bit.
TEST(CudaOps, BiasGradIsTheCpusColumnSumsBitForBit) {
    MAKE_TWIN(t);
    for (DType dt : kAll) {
        SCOPED_TRACE(dtype_name(dt));
        const auto dout = random_values(37 * 29, 5), db0 = random_values(29, 6);
        std::vector<char> bits[2];
        for (int side = 0; side < 2; ++side) {
            Side& x = side ? t.gpu : t.cpu;
            const Tensor db = x.make(db0, dt, {29});
            x.ops->bias_grad(x.s(), db, x.make(dout, dt, {37, 29}));
            bits[side] = x.bits(db);
        }
        EXPECT_EQ(bits[1], bits[0]);
    }
}

// Over more rows than one chunk the GPU sums chunks in parallel and then the chunks' sums: another
// order than the CPU's. Each order's fp32 error is at most rows * u * sum |x| (u = 2^-24), so they
// differ by at most twice that, plus one rounding of the result into 16-bit storage. And the GPU's
// own order is the documented one, bit for bit (chunked_column_sum): the loads it issues ahead of
// its adds (in_order.h) must not reorder the adds.
TEST(CudaOps, BiasGradOverManyChunksIsTheChunkedSumWithinTheReassociationBound) {
    MAKE_TWIN(t);
    const int R = 2100, C = 29; // 17 chunks of 128 rows, the last one short: more than a batch
    for (DType dt : kAll) {
        SCOPED_TRACE(dtype_name(dt));
        const auto dout = random_values(std::size_t(R) * C, 30), db0 = random_values(C, 31);
        std::vector<float> got[2], dys, db_stored; // the inputs as stored in dt
        for (int side = 0; side < 2; ++side) {
            Side& x = side ? t.gpu : t.cpu;
            const Tensor db = x.make(db0, dt, {C}), tdout = x.make(dout, dt, {R, C});
            if (side == 1) dys = x.read(tdout), db_stored = x.read(db);
            x.ops->bias_grad(x.s(), db, tdout);
            got[side] = x.read(db);
        }
        for (int c = 0; c < C; ++c) // the kernels' order of sums, exactly
            EXPECT_EQ(got[1][c],
                      chunked_column_sum(db_stored[c], R, dt,
                                         [&](int r) { return dys[std::size_t(r) * C + c]; }))
                << "column " << c;
        std::vector<double> bound(C);
        for (int c = 0; c < C; ++c) {
            double abs_sum = std::fabs(db0[c]);
            for (int r = 0; r < R; ++r) abs_sum += std::fabs(dout[std::size_t(r) * C + c]);
            bound[c] = 2.0 * (R + 1) * 0x1p-24 * abs_sum + rounding(dt, got[0][c]);
        }
        expect_within(got[1], got[0], bound, "dbias");
    }
}

// LayerNorm: the row statistics are sums of C terms in another order — within 2 C u of each
// other, relative — and the output one rounding of values that close. The parameter gradients
// over rows that fit one chunk sum in the CPU's order: with the same mean and rstd given to both,
// bit for bit.
// C = 1, 3, 65, 769: rows no vector width divides, so chunks of rows start off the 16-byte grid;
// C = 2000 is longer than the kernels' shared-memory row cache (the rest read again from memory).
TEST(CudaOps, LayerNormForwardAndBackward) {
    MAKE_TWIN(t);
    const int N = 23;
    for (const int C : {77, 1, 3, 65, 769, 2000})
        for (DType dt : kAll) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " C " << C);
            const auto in = random_values(std::size_t(N) * C, 7, 2.0f);
            const auto w = random_values(C, 8), b = random_values(C, 9);
            const auto dout = random_values(std::size_t(N) * C, 10),
                       din0 = random_values(N * C, 11);
            const auto dw0 = random_values(C, 12), db0 = random_values(C, 13);
            std::vector<float> out[2], mean[2], rstd[2], din[2];
            std::vector<char> dw[2], db[2];
            std::vector<float> cpu_mean, cpu_rstd;
            for (int side = 0; side < 2; ++side) {
                Side& x = side ? t.gpu : t.cpu;
                const Tensor tin = x.make(in, dt, {N, C}), tw = x.make(w, dt, {C}),
                             tb = x.make(b, dt, {C});
                const Tensor tout = x.make(std::vector<float>(N * C), dt, {N, C});
                const Tensor tm = x.make(std::vector<float>(N), DType::f32, {N});
                const Tensor tr = x.make(std::vector<float>(N), DType::f32, {N});
                x.ops->layernorm_forward(x.s(), tout, tm, tr, tin, tw, tb);
                out[side] = x.read(tout), mean[side] = x.read(tm), rstd[side] = x.read(tr);
                // backward from the CPU's statistics on both sides
                const Tensor sm = x.make(mean[0], DType::f32, {N}),
                             sr = x.make(rstd[0], DType::f32, {N});
                const Tensor tdin = x.make(din0, dt, {N, C}), tdw = x.make(dw0, dt, {C}),
                             tdb = x.make(db0, dt, {C});
                x.ops->layernorm_backward(x.s(), tdin, tdw, tdb, x.make(dout, dt, {N, C}), tin, tw,
                                          sm, sr);
                din[side] = x.read(tdin), dw[side] = x.bits(tdw), db[side] = x.bits(tdb);
            }
            std::vector<double> stat_bound(N), rstd_bound(N), out_bound(out[0].size()),
                din_bound(din[0].size());
            for (int r = 0; r < N; ++r) {
                stat_bound[r] = 4.0 * C * 0x1p-24 * 2.0; // |x| <= 2
                rstd_bound[r] = 4.0 * C * 0x1p-24 * std::fabs(rstd[0][r]);
            }
            for (std::size_t i = 0; i < out_bound.size(); ++i) {
                out_bound[i] = 8.0 * C * 0x1p-24 * 4.0 + rounding(dt, out[0][i]);
                din_bound[i] = 8.0 * C * 0x1p-24 * 16.0 + rounding(dt, din[0][i]);
            }
            expect_within(mean[1], mean[0], stat_bound, "mean");
            expect_within(rstd[1], rstd[0], rstd_bound, "rstd");
            expect_within(out[1], out[0], out_bound, "out");
            expect_within(din[1], din[0], din_bound, "din");
            EXPECT_EQ(dw[1], dw[0]);
            EXPECT_EQ(db[1], db[0]);
        }
}

// The fused residual + LayerNorm is the two ops' bits on the GPU (one kernel there, the same
// chunk order and roundings), and the CPU's fused op within LayerNorm's bound (the residual, an
// element-wise add, bit for bit).
TEST(CudaOps, ResidualLayerNormIsTheTwoOpsBitForBit) {
    MAKE_TWIN(t);
    const int N = 7;
    for (const int C : {1, 3, 65, 768, 769, 2000})
        for (DType dt : kAll) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " C " << C);
            const auto res = random_values(std::size_t(N) * C, 31, 2.0f);
            const auto x = random_values(std::size_t(N) * C, 32, 2.0f);
            const auto w = random_values(C, 33), b = random_values(C, 34);
            // [0] CPU fused, [1] GPU fused, [2] GPU accumulate + layernorm_forward
            std::vector<char> rbits[3], obits[3], mbits[3], sbits[3];
            std::vector<float> out[3];
            for (int run = 0; run < 3; ++run) {
                Side& d = run ? t.gpu : t.cpu;
                const Tensor tr = d.make(res, dt, {N, C}), tx = d.make(x, dt, {N, C});
                const Tensor tw = d.make(w, dt, {C}), tb = d.make(b, dt, {C});
                const Tensor to = d.make(std::vector<float>(std::size_t(N) * C, NAN), dt, {N, C});
                const Tensor tm = d.make(std::vector<float>(N), DType::f32, {N});
                const Tensor ts = d.make(std::vector<float>(N), DType::f32, {N});
                if (run < 2) {
                    d.ops->residual_layernorm_forward(d.s(), tr, tx, to, tm, ts, tw, tb);
                } else {
                    d.ops->accumulate(d.s(), tr, tx);
                    d.ops->layernorm_forward(d.s(), to, tm, ts, tr, tw, tb);
                }
                rbits[run] = d.bits(tr), obits[run] = d.bits(to), mbits[run] = d.bits(tm),
                sbits[run] = d.bits(ts), out[run] = d.read(to);
            }
            EXPECT_EQ(rbits[1], rbits[2]);
            EXPECT_EQ(obits[1], obits[2]);
            EXPECT_EQ(mbits[1], mbits[2]);
            EXPECT_EQ(sbits[1], sbits[2]);
            EXPECT_EQ(rbits[1], rbits[0]);
            std::vector<double> bound(out[0].size()); // |residual| <= 4: as LayerNormForward's
            for (std::size_t i = 0; i < bound.size(); ++i)
                bound[i] = 8.0 * C * 0x1p-24 * 8.0 + rounding(dt, out[0][i]);
            expect_within(out[1], out[0], bound, "out");
        }
}

// LayerNorm's parameter gradients over several chunks of rows: the column sums' bound (above), the
// terms dy (x - mean) rstd computed alike on both sides from the same statistics; on the GPU,
// exactly the chunked order's sums (above).
TEST(CudaOps, LayerNormParamGradsOverManyChunksAreTheChunkedSumsWithinTheReassociationBound) {
    MAKE_TWIN(t);
    const int N = 300, C = 45; // 3 chunks
    for (DType dt : kAll) {
        SCOPED_TRACE(dtype_name(dt));
        const auto in = random_values(std::size_t(N) * C, 32, 2.0f), w = random_values(C, 33);
        const auto dout = random_values(std::size_t(N) * C, 34);
        const auto dw0 = random_values(C, 35), db0 = random_values(C, 36);
        std::vector<float> mean(N), rstd(N); // any statistics, the same for both sides
        for (int r = 0; r < N; ++r) mean[r] = 0.01f * float(r % 7), rstd[r] = 0.5f + 0.001f * r;
        std::vector<float> dw[2], db[2], xs, dys, dw_stored, db_stored; // inputs as stored in dt
        for (int side = 0; side < 2; ++side) {
            Side& x = side ? t.gpu : t.cpu;
            const Tensor tin = x.make(in, dt, {N, C}), tw = x.make(w, dt, {C});
            const Tensor tdin = x.make(std::vector<float>(std::size_t(N) * C), dt, {N, C});
            const Tensor tdw = x.make(dw0, dt, {C}), tdb = x.make(db0, dt, {C});
            const Tensor tdout = x.make(dout, dt, {N, C});
            if (side == 1)
                xs = x.read(tin), dys = x.read(tdout), dw_stored = x.read(tdw),
                db_stored = x.read(tdb);
            x.ops->layernorm_backward(x.s(), tdin, tdw, tdb, tdout, tin, tw,
                                      x.make(mean, DType::f32, {N}), x.make(rstd, DType::f32, {N}));
            dw[side] = x.read(tdw), db[side] = x.read(tdb);
        }
        for (int c = 0; c < C; ++c) { // the kernels' order of sums, exactly
            const auto at = [&](int r) { return std::size_t(r) * C + c; };
            EXPECT_EQ(dw[1][c], chunked_column_sum(dw_stored[c], N, dt,
                                                   [&](int r) {
                                                       return dys[at(r)] * (xs[at(r)] - mean[r]) *
                                                              rstd[r];
                                                   }))
                << "dweight column " << c;
            EXPECT_EQ(db[1][c],
                      chunked_column_sum(db_stored[c], N, dt, [&](int r) { return dys[at(r)]; }))
                << "dbias column " << c;
        }
        std::vector<double> bw(C), bb(C);
        for (int c = 0; c < C; ++c) {
            double sw = std::fabs(dw0[c]), sb = std::fabs(db0[c]);
            for (int r = 0; r < N; ++r) {
                const double dy = dout[std::size_t(r) * C + c];
                sw += std::fabs(dy * (in[std::size_t(r) * C + c] - mean[r]) * rstd[r]) * 1.01;
                sb += std::fabs(dy);
            }
            bw[c] = 2.0 * (N + 1) * 0x1p-24 * sw + rounding(dt, dw[0][c]);
            bb[c] = 2.0 * (N + 1) * 0x1p-24 * sb + rounding(dt, db[0][c]);
        }
        expect_within(dw[1], dw[0], bw, "dweight");
        expect_within(db[1], db[0], bb, "dbias");
    }
}

// Attention mixes T-term reductions (scores, softmax sums, P V) and, in 16-bit storage, rounds
// probabilities and scores' gradients: relative errors of a few ulp of the storage type. T = 19
// and 1: rows no vector width divides; 64: every row on the 16-byte grid; 530: rows longer than
// the softmax backward's shared-memory row cache.
TEST(CudaOps, CausalAttentionForwardAndBackward) {
    MAKE_TWIN(t);
    const int C = 24, H = 3;
    for (const int T : {19, 1, 64, 530})
        for (DType dt : kAll) {
            const int B = T > 100 ? 1 : 2;
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " T " << T);
            const auto qkv = random_values(std::size_t(B) * T * 3 * C, 14);
            const auto dout = random_values(std::size_t(B) * T * C, 15);
            std::vector<float> out[2], att[2], dqkv[2];
            for (int side = 0; side < 2; ++side) {
                Side& x = side ? t.gpu : t.cpu;
                const Tensor tq = x.make(qkv, dt, {B, T, 3 * C});
                const Tensor to = x.make(std::vector<float>(B * T * C, NAN), dt, {B, T, C});
                const Tensor ta = x.make(std::vector<float>(B * H * T * T, NAN), dt, {B, H, T, T});
                const Tensor td = x.make(std::vector<float>(B * T * 3 * C, NAN), dt, {B, T, 3 * C});
                x.ops->attention_forward(x.s(), to, ta, tq, H);
                x.ops->attention_backward(x.s(), td, x.make(dout, dt, {B, T, C}), tq, ta, H);
                out[side] = x.read(to), att[side] = x.read(ta), dqkv[side] = x.read(td);
            }
            const double tol = dt == DType::f32 ? 1e-6 : dt == DType::bf16 ? 2e-2 : 3e-3;
            EXPECT_LT(relative_error(att[1], att[0]), tol);
            EXPECT_LT(relative_error(out[1], out[0]), tol);
            EXPECT_LT(relative_error(dqkv[1], dqkv[0]), 2 * tol);
            for (int b = 0; b < B * H; ++b) // above the diagonal: exactly zero
                for (int i = 0; i < T; ++i)
                    for (int j = i + 1; j < T; ++j)
                        ASSERT_EQ(att[1][(std::size_t(b) * T + i) * T + j], 0.0f);
        }
}

namespace {
// Causal attention in float64 over qkv [B, T, 3C] as stored (the values the kernels read), with
// every quantity the flash kernels' error bounds are built from.
struct ExactAttention {
    std::vector<double> out, lse, dqkv;
    std::vector<double> out_bound, lse_bound, dqkv_bound; // |flash - exact| may reach these
};

// The bounds, from fp32's unit roundoff u = 2^-24 (|q|, |k|, |v|, |dout| <= 1 here):
// - a score scale q.k sums hd products: error <= (hd + 1) u scale sum|q k| <= (hd + 1) u sqrt(hd);
// - a probability e^(s - lse) carries that error twice (its score's and lse's), plus T u from the
//   softmax's sum and a few u from expf and the division: relative error eps below;
// - out = sum_j P_ij v_j: eps times sum_j P_ij |v_j|, plus T u for its own sum;
// - lse = m + log l: eps (1 + |lse|);
// - dV = sum_i P_ij dO_i: eps times sum_i P_ij |dO_i|;
// - dS = P (dO.v - D), where D = dO.out is computed from out *as stored* (in 16-bit storage its
//   rounding is the largest error of all: sum_c |dO_c| times out's bound); dK, dQ = scale dS q, k
//   summed over up to T terms;
// each doubled as a margin, and a 16-bit result is then rounded once: one ulp of the storage type.
// On tensor cores (`tensor_cores`: flash_attention_wmma.h) P and dS are also rounded to the 16-bit
// storage type before their products, each off by up to its unit roundoff u16 (2^-8 bf16, 2^-11
// fp16) relative, plus, in fp16, 2^-25 absolute where it falls below fp16's normal range (half the
// subnormal spacing; bf16 has fp32's range). l, lse and the scores are not rounded. So out gains
// u16 sum_j P_ij |v_j| + 2^-25 (i + 1) (the forward's P is measured against a running maximum at
// most the final one and l >= 1, which only shrink its absolute error), dV u16 sum_i P_ij |dO_i|
// + 2^-25 per term, dK and dQ u16 sum |dS q| (|dS k|) + 2^-25 sum |q| (|k|); doubled like the rest.
// The products of 16-bit inputs are exact in fp32 and summed in fp32, as the bounds above assume
// (the emulator adds in order, rounding to nearest; a tensor core's internal additions may round
// toward zero, up to twice the error per addition: inside the doubling).
// Grouped-query (Hkv kv heads, G = H / Hkv query heads each): query head h reads kv head h / G of
// the row [q: H hd | k: Hkv hd | v: Hkv hd]; a kv head's dK, dV are the sums of its G heads' terms
// and their bounds, each sum over G T terms in fp32 (G T u), and rounded once to the storage type.
ExactAttention exact_attention(const std::vector<float>& qkv, const std::vector<float>& dout, int B,
                               int T, int C, int H, int Hkv, DType dt, bool tensor_cores) {
    const int hd = C / H, G = H / Hkv;
    const std::size_t row = std::size_t(H + 2 * Hkv) * hd;
    const double u = 0x1p-24, scale = 1.0 / std::sqrt(double(float(hd)));
    const double p_round = !tensor_cores ? 0.0 : dt == DType::bf16 ? 0x1p-8 : 0x1p-11;
    const double p_floor = tensor_cores && dt == DType::f16 ? 0x1p-25 : 0.0;
    const double eps = u * (2.0 * (hd + 1) * std::sqrt(double(hd)) + 2.0 * T + 32.0);
    ExactAttention r;
    r.out.assign(std::size_t(B) * T * C, 0.0), r.out_bound = r.out;
    r.lse.assign(std::size_t(B) * H * T, 0.0), r.lse_bound = r.lse;
    r.dqkv.assign(std::size_t(B) * T * row, 0.0), r.dqkv_bound = r.dqkv;
    std::vector<double> P(std::size_t(T) * T), dS(std::size_t(T) * T), dS_err(std::size_t(T) * T);
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            // Column of q (part 0), k (1), v (2) of query head h in a row.
            const auto col = [&](int part, int c) {
                return std::size_t(part == 0 ? h : H + (part - 1) * Hkv + h / G) * hd + c;
            };
            auto x = [&](int t, int part, int c) {
                return double(qkv[(std::size_t(b) * T + t) * row + col(part, c)]);
            };
            auto dO = [&](int t, int c) {
                return double(dout[(std::size_t(b) * T + t) * C + h * hd + c]);
            };
            auto at = [&](std::vector<double>& v, int t, int part, int c) -> double& {
                return v[(std::size_t(b) * T + t) * row + col(part, c)];
            };
            for (int i = 0; i < T; ++i) {
                double m = -INFINITY;
                std::vector<double> s(i + 1);
                for (int j = 0; j <= i; ++j) {
                    double d = 0;
                    for (int c = 0; c < hd; ++c) d += x(i, 0, c) * x(j, 1, c);
                    m = std::max(m, s[j] = scale * d);
                }
                double l = 0;
                for (int j = 0; j <= i; ++j) l += std::exp(s[j] - m);
                const double lse = m + std::log(l);
                r.lse[(std::size_t(b) * H + h) * T + i] = lse;
                r.lse_bound[(std::size_t(b) * H + h) * T + i] = 2.0 * eps * (1.0 + std::fabs(lse));
                for (int j = 0; j < T; ++j)
                    P[std::size_t(i) * T + j] = j <= i ? std::exp(s[j] - lse) : 0.0;
                double D = 0, D_err = 0;
                for (int c = 0; c < hd; ++c) {
                    double o = 0, mag = 0;
                    for (int j = 0; j <= i; ++j) {
                        o += P[std::size_t(i) * T + j] * x(j, 2, c);
                        mag += P[std::size_t(i) * T + j] * std::fabs(x(j, 2, c));
                    }
                    const std::size_t oi = (std::size_t(b) * T + i) * C + h * hd + c;
                    r.out[oi] = o;
                    r.out_bound[oi] =
                        2.0 * ((eps + T * u + p_round) * mag + p_floor * (i + 1)) + rounding(dt, o);
                    D += dO(i, c) * o;
                    D_err += std::fabs(dO(i, c)) * (r.out_bound[oi] + (hd + 1) * u * std::fabs(o));
                }
                for (int j = 0; j <= i; ++j) {
                    double dp = 0, dp_mag = 0;
                    for (int c = 0; c < hd; ++c) {
                        dp += dO(i, c) * x(j, 2, c);
                        dp_mag += std::fabs(dO(i, c) * x(j, 2, c));
                    }
                    const double p = P[std::size_t(i) * T + j];
                    dS[std::size_t(i) * T + j] = p * (dp - D);
                    dS_err[std::size_t(i) * T + j] =
                        p * (eps * std::fabs(dp - D) + (hd + 1) * u * dp_mag + D_err);
                }
            }
            for (int c = 0; c < hd; ++c)
                for (int n = 0; n < T; ++n) { // n as a query (dQ) and as a key (dK, dV)
                    double dq = 0, dq_err = 0, dk = 0, dk_err = 0, dv = 0, dv_mag = 0;
                    for (int j = 0; j <= n; ++j) {
                        const double ds = dS[std::size_t(n) * T + j];
                        dq += ds * x(j, 1, c);
                        dq_err += dS_err[std::size_t(n) * T + j] * std::fabs(x(j, 1, c)) +
                                  ((T + 1) * u + p_round) * std::fabs(ds * x(j, 1, c)) +
                                  p_floor * std::fabs(x(j, 1, c));
                    }
                    for (int i = n; i < T; ++i) {
                        const double ds = dS[std::size_t(i) * T + n], p = P[std::size_t(i) * T + n];
                        dk += ds * x(i, 0, c);
                        dk_err += dS_err[std::size_t(i) * T + n] * std::fabs(x(i, 0, c)) +
                                  ((G * T + 1) * u + p_round) * std::fabs(ds * x(i, 0, c)) +
                                  p_floor * std::fabs(x(i, 0, c));
                        dv += p * dO(i, c);
                        dv_mag += p * std::fabs(dO(i, c));
                    }
                    // += : a kv head's dk, dv collect its group (the storage rounding is below)
                    at(r.dqkv, n, 0, c) += scale * dq;
                    at(r.dqkv_bound, n, 0, c) += 2.0 * scale * dq_err;
                    at(r.dqkv, n, 1, c) += scale * dk;
                    at(r.dqkv_bound, n, 1, c) += 2.0 * scale * dk_err;
                    at(r.dqkv, n, 2, c) += dv;
                    at(r.dqkv_bound, n, 2, c) +=
                        2.0 * ((eps + G * T * u + p_round) * dv_mag + p_floor * (T - n));
                }
        }
    for (std::size_t i = 0; i < r.dqkv.size(); ++i) r.dqkv_bound[i] += rounding(dt, r.dqkv[i]);
    return r;
}

void expect_near_exact(const std::vector<float>& got, const std::vector<double>& want,
                       const std::vector<double>& bound, const char* what) {
    ASSERT_EQ(got.size(), want.size());
    int reported = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double d = std::fabs(double(got[i]) - want[i]);
        if (!(d <= bound[i]) && reported++ < 5) // a NaN (an element never written) fails too
            ADD_FAILURE() << what << "[" << i << "]: flash " << got[i] << " exact " << want[i]
                          << " differ by " << d << " > bound " << bound[i];
    }
}

// One flash forward and backward on the CUDA side; outputs start as NaN so that an element
// never written fails every comparison.
struct FlashRun {
    std::vector<float> out, lse, dqkv, qkv, dout; // qkv, dout: the inputs as stored
    std::vector<char> out_bits, lse_bits, dqkv_bits;
};
// `skip` elements before the inputs qkv and dout (each a view that far into its allocation): 1 puts
// them off the 16-byte grid, where the tensor-core kernels copy their tiles element by element.
Tensor input_at(Side& g, std::vector<float> values, DType dt, Shape shape, std::int64_t skip) {
    values.insert(values.begin(), std::size_t(skip), 0.0f);
    const Tensor x = g.make(values, dt, {std::int64_t(values.size())});
    return Tensor{static_cast<char*>(x.data) + skip * dtype_size(dt), dt, shape, x.device};
}

FlashRun run_flash(Side& g, DType dt, int B, int T, int C, int H, int Hkv, std::uint64_t seed,
                   std::int64_t skip = 0) {
    FlashRun r;
    const int row = C / H * (H + 2 * Hkv); // a qkv row: 3C when Hkv = H
    const Tensor tq =
        input_at(g, random_values(std::size_t(B) * T * row, seed), dt, {B, T, row}, skip);
    const Tensor tdo =
        input_at(g, random_values(std::size_t(B) * T * C, seed + 1), dt, {B, T, C}, skip);
    const Tensor to = g.make(std::vector<float>(std::size_t(B) * T * C, NAN), dt, {B, T, C});
    const Tensor tl =
        g.make(std::vector<float>(std::size_t(B) * H * T, NAN), DType::f32, {B, H, T});
    const Tensor td = g.make(std::vector<float>(std::size_t(B) * T * row, NAN), dt, {B, T, row});
    g.ops->flash_attention_forward(g.s(), to, tl, tq, H, Hkv);
    g.ops->flash_attention_backward(g.s(), td, tdo, tq, to, tl, H, Hkv);
    r.out = g.read(to), r.lse = g.read(tl), r.dqkv = g.read(td);
    r.qkv = g.read(tq), r.dout = g.read(tdo);
    r.out_bits = g.bits(to), r.lse_bits = g.bits(tl), r.dqkv_bits = g.bits(td);
    return r;
}

struct FlashCase {
    int B, T, H, hd;
    int Hkv = 0; // kv heads; 0: H (multi-head attention)
    int kv() const { return Hkv ? Hkv : H; }
};
// Sequences shorter than, equal to no multiple of, and longer than the CUDA-core kernels' 32-row
// tile and the tensor-core kernels' 64-row one (130: three of those, so tiles off and on the
// diagonal each way); head dims that fill the 8 lanes of a row unevenly (20: no multiple of 16, so
// 16-bit storage takes the CUDA-core kernels too), that give the tensor-core kernels an odd number
// of 16-column blocks in each register sizing (48, 80), and the largest the kernels take (128:
// shared memory over the default 48 KiB, the opt-in path).
// Grouped-query (issue 25): (heads, kv heads) (4, 1), (4, 2), (6, 2), at head dims for either path
// (16-bit storage: 16 and 48 on tensor cores, 20 and 12 on CUDA cores), several tiles each way, so
// a kv head's dK/dV block walks its group's heads over more than one query tile.
const FlashCase kFlashCases[] = {{2, 1, 2, 16},     {1, 7, 3, 16},     {2, 65, 2, 16},
                                 {1, 65, 1, 64},    {1, 130, 1, 48},   {1, 33, 2, 20},
                                 {1, 33, 1, 80},    {1, 40, 1, 128},   {2, 67, 4, 16, 1},
                                 {1, 70, 4, 20, 2}, {1, 97, 6, 48, 2}, {1, 37, 6, 12, 2}};

// The largest |flash - exact| / bound over all elements.
double worst_ratio(const std::vector<float>& got, const std::vector<double>& want,
                   const std::vector<double>& bound) {
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
        worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / bound[i]);
    return worst;
}
} // namespace

// Gives the twin's CUDA side the given tensor-core flash kernels (flash_attention_path.h).
Side& flash_side(Twin& t, cuda::TensorCoreFlash tc) {
    t.gpu.ops = make_cuda_ops(t.gpu.ctx->tracker(), LinearPath::cublaslt, tc);
    return t.gpu;
}
constexpr cuda::TensorCoreFlash kTensorCoreFlash[] = {cuda::TensorCoreFlash::mma,
                                                      cuda::TensorCoreFlash::wmma};
const char* flash_name(cuda::TensorCoreFlash tc) { // where every variant runs as asked
    return cuda::flash_kernels_name(DType::bf16, 64, tc);
}

// What `bench attention` reports as the kernels that ran: the variant asked for where it applies;
// mma_regs and mma_wide above hd 64 run the mma kernels (no room in registers), fp32 or a head dim
// off the tensor cores' k of 16 the CUDA-core ones.
TEST(CudaOps, FlashKernelsAreNamedAsTheyRun) {
    MAKE_TWIN(t);
    using cuda::TensorCoreFlash;
    EXPECT_EQ(t.cpu.ops->flash_attention_kernels(DType::bf16, 64), "cpu");
    const Ops& regs = *flash_side(t, TensorCoreFlash::mma_regs).ops;
    EXPECT_EQ(regs.flash_attention_kernels(DType::bf16, 64), "mma_regs");
    EXPECT_EQ(regs.flash_attention_kernels(DType::f16, 48), "mma_regs");
    EXPECT_EQ(regs.flash_attention_kernels(DType::bf16, 128), "mma");
    EXPECT_EQ(regs.flash_attention_kernels(DType::bf16, 72), "cuda_cores");
    EXPECT_EQ(regs.flash_attention_kernels(DType::f32, 64), "cuda_cores");
    const Ops& wide = *flash_side(t, TensorCoreFlash::mma_wide).ops;
    EXPECT_EQ(wide.flash_attention_kernels(DType::bf16, 64), "mma_wide");
    EXPECT_EQ(wide.flash_attention_kernels(DType::bf16, 128), "mma");
    EXPECT_EQ(wide.flash_attention_kernels(DType::f32, 64), "cuda_cores");
    const Ops& wmma = *flash_side(t, TensorCoreFlash::wmma).ops;
    EXPECT_EQ(wmma.flash_attention_kernels(DType::f16, 128), "wmma");
    EXPECT_EQ(flash_side(t, TensorCoreFlash::mma).ops->flash_attention_kernels(DType::bf16, 64),
              "mma");
}

// Flash attention against causal attention computed in float64 from the same stored inputs, every
// element within its bound (exact_attention's comment argues them). Where tensor cores serve, both
// of their kernels (mma, wmma) are held to it.
TEST(CudaOps, FlashAttentionMatchesAFloat64Reference) {
    MAKE_TWIN(t);
    for (const cuda::TensorCoreFlash tc : kTensorCoreFlash) {
        Side& g = flash_side(t, tc);
        for (const FlashCase c : kFlashCases)
            for (DType dt : kAll) {
                const bool tensor_cores = cuda::flash_attention_on_tensor_cores(dt, c.hd);
                if (!tensor_cores && tc != cuda::TensorCoreFlash::mma) continue; // ran once
                SCOPED_TRACE(testing::Message()
                             << flash_name(tc) << " " << dtype_name(dt) << " B " << c.B << " T "
                             << c.T << " H " << c.H << " Hkv " << c.kv() << " hd " << c.hd);
                const int C = c.H * c.hd;
                const FlashRun f = run_flash(g, dt, c.B, c.T, C, c.H, c.kv(), 50);
                const ExactAttention e =
                    exact_attention(f.qkv, f.dout, c.B, c.T, C, c.H, c.kv(), dt, tensor_cores);
                expect_near_exact(f.out, e.out, e.out_bound, "out");
                expect_near_exact(f.lse, e.lse, e.lse_bound, "lse");
                expect_near_exact(f.dqkv, e.dqkv, e.dqkv_bound, "dqkv");
            }
    }
}

// The tensor-core kernels run for 16-bit storage with a head dim that is a multiple of 16, the
// CUDA-core ones otherwise — seen in the results: in bf16 at hd 64 the rounding of P and dS to bf16
// puts some dK/dQ element beyond the bound that leaves them unrounded, while at hd 20 (no multiple
// of 16; WMMA could not even load its rows, whose pitch is no 16-byte multiple) every element
// stays within it.
TEST(CudaOps, FlashAttentionUsesTensorCoresForSixteenBitMultiplesOfSixteen) {
    EXPECT_TRUE(cuda::flash_attention_on_tensor_cores(DType::bf16, 64));
    EXPECT_TRUE(cuda::flash_attention_on_tensor_cores(DType::f16, 16));
    EXPECT_FALSE(cuda::flash_attention_on_tensor_cores(DType::f32, 64));
    EXPECT_FALSE(cuda::flash_attention_on_tensor_cores(DType::bf16, 20));
    EXPECT_FALSE(cuda::flash_attention_on_tensor_cores(DType::f16, 8));
    MAKE_TWIN(t);
    for (const int hd : {64, 20}) {
        SCOPED_TRACE(testing::Message() << "bf16 hd " << hd);
        const int T = 65, C = hd;
        const FlashRun f = run_flash(t.gpu, DType::bf16, 1, T, C, 1, 1, 80);
        const ExactAttention e = exact_attention(f.qkv, f.dout, 1, T, C, 1, 1, DType::bf16, false);
        const double worst = worst_ratio(f.dqkv, e.dqkv, e.dqkv_bound);
        if (hd == 64)
            EXPECT_GT(worst, 1.0) << "P and dS are not rounded: the CUDA-core kernels ran";
        else
            EXPECT_LE(worst, 1.0) << "P or dS are rounded: not the CUDA-core kernels";
    }
}

// Flash attention against the CUDA backend's materialising attention on the same inputs. In
// 16-bit storage the materialising path rounds P (and dS) to the storage type before its GEMMs —
// a relative error of up to 2^-9 (bf16) or 2^-12 (fp16) per probability, a few of those in the
// norm — while flash keeps them in fp32: so the two differ by about the materialising path's own
// error, the tolerances of the CPU/CUDA attention test above. In fp32 both are fp32 sums in
// different orders: a few (hd + T) u relative, far below 1e-5.
TEST(CudaOps, FlashAttentionMatchesTheMaterialisingAttention) {
    MAKE_TWIN(t);
    Side& g = t.gpu;
    for (const FlashCase c : {FlashCase{2, 65, 2, 16}, FlashCase{1, 65, 1, 64}})
        for (DType dt : kAll) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " T " << c.T << " hd " << c.hd);
            const int B = c.B, T = c.T, H = c.H, C = H * c.hd;
            const FlashRun f = run_flash(g, dt, B, T, C, H, H, 60);
            const Tensor tq = g.make(f.qkv, dt, {B, T, 3 * C}), tdo = g.make(f.dout, dt, {B, T, C});
            const Tensor to = g.make(std::vector<float>(std::size_t(B) * T * C), dt, {B, T, C});
            const Tensor ta =
                g.make(std::vector<float>(std::size_t(B) * H * T * T), dt, {B, H, T, T});
            const Tensor td =
                g.make(std::vector<float>(std::size_t(B) * T * 3 * C), dt, {B, T, 3 * C});
            g.ops->attention_forward(g.s(), to, ta, tq, H);
            g.ops->attention_backward(g.s(), td, tdo, tq, ta, H);
            const double tol = dt == DType::f32 ? 1e-5 : dt == DType::bf16 ? 2e-2 : 3e-3;
            EXPECT_LT(relative_error(f.out, g.read(to)), tol);
            EXPECT_LT(relative_error(f.dqkv, g.read(td)), 2 * tol);
        }
}

// Grouped-query flash attention, the CUDA op against the CPU op (both Ops, issue 25's layout):
// (heads, kv heads) (4, 1), (4, 2), (6, 2), on either CUDA path in 16-bit storage (hd 16 and 48 on
// tensor cores, 20 on CUDA cores). Both compute in fp32 from the same stored inputs and round once
// to the storage type; fp32 storage differs by the order of fp32 sums of up to G T + hd terms
// (~1e-6 relative, bound 1e-5); 16-bit storage by about one rounding of each stored result
// (2^-9 bf16, 2^-12 fp16) and, on tensor cores, P and dS rounded to 16 bits (up to 2^-8, 2^-11
// each, errors of random sign in the norm) — the tolerances of the attention tests above. lse is
// fp32 in every storage type. Each of the two is also held to the float64 reference above (CPU:
// tests/test_flash_attention.cpp).
TEST(CudaOps, FlashAttentionGroupedQueryMatchesTheCpuOp) {
    MAKE_TWIN(t);
    for (const FlashCase c :
         {FlashCase{1, 70, 4, 20, 2}, FlashCase{2, 67, 4, 16, 1}, FlashCase{1, 40, 6, 48, 2}})
        for (DType dt : kAll) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " T " << c.T << " H " << c.H
                                            << " Hkv " << c.kv() << " hd " << c.hd);
            const int C = c.H * c.hd;
            const FlashRun cpu = run_flash(t.cpu, dt, c.B, c.T, C, c.H, c.kv(), 90);
            const FlashRun gpu = run_flash(t.gpu, dt, c.B, c.T, C, c.H, c.kv(), 90);
            ASSERT_EQ(cpu.qkv, gpu.qkv); // the same stored inputs
            const double tol = dt == DType::f32 ? 1e-5 : dt == DType::bf16 ? 2e-2 : 3e-3;
            EXPECT_LT(relative_error(gpu.out, cpu.out), tol);
            EXPECT_LT(relative_error(gpu.lse, cpu.lse), 1e-5);
            EXPECT_LT(relative_error(gpu.dqkv, cpu.dqkv), 2 * tol);
        }
}

// Each output element is summed by one thread in a fixed order (no atomics): two runs on the same
// inputs give the same bits — what ZeRO's bitwise equality between stages rests on. Several tiles
// each way (T = 65), so every barrier of the kernels is crossed more than once
// (tests/barrier_mutants.sh runs this test with each deleted). fp32 takes the CUDA-core kernels,
// bf16 the tensor cores': `tc`'s. Two heads of `hd`.
void expect_flash_deterministic(Twin& t, cuda::TensorCoreFlash tc, std::initializer_list<DType> dts,
                                int hd) {
    Side& g = flash_side(t, tc);
    for (DType dt : dts) {
        SCOPED_TRACE(testing::Message() << flash_name(tc) << " " << dtype_name(dt));
        for (const int kv_heads : {2, 1}) { // multi-head, and both query heads on one kv head
            const FlashRun a = run_flash(g, dt, 1, 65, 2 * hd, 2, kv_heads, 70);
            const FlashRun b = run_flash(g, dt, 1, 65, 2 * hd, 2, kv_heads, 70);
            EXPECT_EQ(a.out_bits, b.out_bits);
            EXPECT_EQ(a.lse_bits, b.lse_bits);
            EXPECT_EQ(a.dqkv_bits, b.dqkv_bits);
            for (float x : a.dqkv) ASSERT_TRUE(std::isfinite(x)); // every element written
        }
    }
}

TEST(CudaOps, FlashAttentionIsBitwiseDeterministic) {
    MAKE_TWIN(t);
    expect_flash_deterministic(t, cuda::TensorCoreFlash::mma, {DType::f32, DType::bf16}, 16);
}

// The same for the WMMA kernels (a test of its own, so that barrier_mutants.sh runs only the
// kernels whose barrier it deleted), at hd 32: a lane then reads rows of the warp's scratch that
// other lanes stored (at hd 16 the emulator's store and the kernel's row copy give every element
// to the same lane, and a deleted __syncwarp could not be seen).
TEST(CudaOps, FlashAttentionWmmaIsBitwiseDeterministic) {
    MAKE_TWIN(t);
    expect_flash_deterministic(t, cuda::TensorCoreFlash::wmma, {DType::bf16}, 32);
}

// Runs each case on the mma kernels and on `variant`, which must give the same bits, forward and
// backward.
void expect_the_mma_kernels_bits(Twin& t, cuda::TensorCoreFlash variant,
                                 std::initializer_list<FlashCase> cases) {
    for (DType dt : {DType::bf16, DType::f16})
        for (const FlashCase c : cases) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " B " << c.B << " T " << c.T
                                            << " H " << c.H << " hd " << c.hd << " Hkv " << c.kv());
            const int C = c.H * c.hd;
            const FlashRun a = run_flash(flash_side(t, cuda::TensorCoreFlash::mma), dt, c.B, c.T, C,
                                         c.H, c.kv(), 71);
            const FlashRun b = run_flash(flash_side(t, variant), dt, c.B, c.T, C, c.H, c.kv(), 71);
            EXPECT_EQ(a.out_bits, b.out_bits);
            EXPECT_EQ(a.lse_bits, b.lse_bits);
            EXPECT_EQ(a.dqkv_bits, b.dqkv_bits);
            for (float x : b.dqkv) ASSERT_TRUE(std::isfinite(x)); // every element written
        }
}

// The mma kernels with each warp's row operands in registers (SHARDLAB_CUDA_FLASH=mma_regs) make
// the same mma calls on the same operands as the default's: the same bits, forward and backward,
// at hd 16, 48 (an odd number of 16-column blocks) and 64, with and without grouped queries. Two
// tiles each way (T = 65), so every barrier is crossed more than once (barrier_mutants.sh runs this
// test with each deleted).
TEST(CudaOps, FlashAttentionMmaRegsIsTheMmaKernelsBitForBit) {
    MAKE_TWIN(t);
    expect_the_mma_kernels_bits(
        t, cuda::TensorCoreFlash::mma_regs,
        {FlashCase{1, 65, 2, 16, 1}, FlashCase{1, 65, 1, 48}, FlashCase{1, 65, 2, 64, 2}});
}

// Two 16-row blocks a warp (SHARDLAB_CUDA_FLASH=mma_wide: in the forward and dQ query tiles of 128
// rows, key tiles of 64; in dK/dV key tiles of 128, query tiles of 64) make, for each row, the mma
// calls of the default kernels: the same bits. The sequences cover a tile of 128 shorter than one
// of 64 (T = 40: warps whose rows are all past T), one that ends inside its second tile of 64 (130:
// the walk stops at T's last tile, not the wide tile's; in dK/dV the second wide tile's two keys),
// two tiles of 128 with the second partial (200), and a whole second tile walked without a mask
// (300, as GPT-2's T = 1024 mostly does); in dK/dV the query tile before a wide tile's upper keys
// (none of their mma calls) and the one the diagonal cuts for them; hd 16, 32, 48 and 64 (all
// sized for hd <= 64), a head of one, grouped queries.
TEST(CudaOps, FlashAttentionMmaWideIsTheMmaKernelsBitForBit) {
    MAKE_TWIN(t);
    expect_the_mma_kernels_bits(t, cuda::TensorCoreFlash::mma_wide,
                                {FlashCase{1, 40, 1, 16}, FlashCase{2, 130, 4, 32, 2},
                                 FlashCase{1, 65, 1, 48}, FlashCase{1, 200, 2, 64, 2},
                                 FlashCase{1, 300, 2, 64, 1}});
}

// SHARDLAB_CUDA_FLASH=auto (the default on a GPU) times each mma kernel's forms on a shape's first
// call and keeps the fastest (model/flash_tuner.h; its choosing: tests/test_flash_tuner.cpp). The
// forms give the same bits whichever mix the times pick (each kernel writes its own columns of
// dqkv, and each form of it is the mma kernels' bits: the tests above), so the results are mma's,
// here from the tuning calls of a fresh Ops per case and then from the chosen forms. Named as it
// ran: "auto" until a shape is timed, then the forms chosen; mma above hd 64 (one form),
// cuda_cores for fp32. T = 130: tiles each form cuts differently; grouped queries.
TEST(CudaOps, FlashAttentionAutoIsTheMmaKernelsBitForBit) {
    MAKE_TWIN(t);
    const auto tuned = cuda::TensorCoreFlash::tuned;
    expect_the_mma_kernels_bits(t, tuned, {FlashCase{1, 130, 2, 64, 1}});
    const FlashRun mma =
        run_flash(flash_side(t, cuda::TensorCoreFlash::mma), DType::bf16, 1, 65, 128, 2, 2, 73);
    Side& g = flash_side(t, tuned); // one Ops from here on
    EXPECT_EQ(g.ops->flash_attention_kernels(DType::bf16, 64), "auto");
    EXPECT_EQ(g.ops->flash_attention_kernels(DType::bf16, 128), "mma");
    EXPECT_EQ(g.ops->flash_attention_kernels(DType::f32, 64), "cuda_cores");
    const FlashRun timed = run_flash(g, DType::bf16, 1, 65, 128, 2, 2, 73);
    const FlashRun chosen = run_flash(g, DType::bf16, 1, 65, 128, 2, 2, 73);
    for (const FlashRun* r : {&timed, &chosen}) {
        EXPECT_EQ(r->out_bits, mma.out_bits);
        EXPECT_EQ(r->lse_bits, mma.lse_bits);
        EXPECT_EQ(r->dqkv_bits, mma.dqkv_bits);
    }
    const std::string said = g.ops->flash_attention_kernels(DType::bf16, 64);
    bool named = false; // one of the 27 choices, then the times
    for (const cuda::MmaForm f : cuda::kMmaForms)
        for (const cuda::MmaForm kv : cuda::kMmaForms)
            for (const cuda::MmaForm q : cuda::kMmaForms)
                named |= said.starts_with(std::string("auto: forward ") + cuda::mma_form_name(f) +
                                          ", dK/dV " + cuda::mma_form_name(kv) + ", dQ " +
                                          cuda::mma_form_name(q) + " (forward ms: mma ");
    EXPECT_TRUE(named) << said;
}

// Inputs off the 16-byte grid (qkv and dout one element into their allocations) are copied into the
// tensor-core kernels' tiles element by element, not by cp.async: the same tiles, zeros included
// (rows past T; at hd 48 the mma kernels' columns up to their width of 64), so the same bits as
// aligned inputs. T = 130: tiles cut by the diagonal and by T and, in the mma kernels, a tile
// neither cuts; grouped queries. The mma, mma_wide and WMMA kernels, one 16-bit type each (the
// copies move bytes: the type changes nothing). The run off the grid goes first, so that on a GPU
// a tile it failed to write cannot hold the aligned run's values.
TEST(CudaOps, FlashAttentionOffTheGridIsTheAlignedBits) {
    MAKE_TWIN(t);
    using cuda::TensorCoreFlash;
    for (const auto& [tc, dt] : {std::pair{TensorCoreFlash::mma, DType::bf16},
                                 std::pair{TensorCoreFlash::mma_wide, DType::f16},
                                 std::pair{TensorCoreFlash::wmma, DType::bf16}})
        for (const FlashCase c : {FlashCase{1, 130, 4, 48, 2}, FlashCase{1, 130, 2, 64}}) {
            SCOPED_TRACE(testing::Message() << flash_name(tc) << " " << dtype_name(dt) << " hd "
                                            << c.hd << " Hkv " << c.kv());
            Side& g = flash_side(t, tc);
            const int C = c.H * c.hd;
            const FlashRun off = run_flash(g, dt, c.B, c.T, C, c.H, c.kv(), 74, 1);
            const FlashRun on = run_flash(g, dt, c.B, c.T, C, c.H, c.kv(), 74);
            ASSERT_EQ(on.qkv, off.qkv); // the same stored inputs
            EXPECT_EQ(on.out_bits, off.out_bits);
            EXPECT_EQ(on.lse_bits, off.lse_bits);
            EXPECT_EQ(on.dqkv_bits, off.dqkv_bits);
        }
}

#ifdef SHARDLAB_CUDA_EMU
// Where the device's opt-in shared memory is short of two stages' (an sm_86/89 GPU's 99 KiB; at hd
// 128 the dK/dV kernel's two stages take 105,472 B), the mma kernels stream each tile through one
// buffer, with a second barrier a tile: the same mma calls on the same operands, so the same bits
// as two stages, forward and backward, with and without grouped queries. A two-stage kernel could
// not have run: its shared memory is over the limit, which the launch's opt-in refuses. Three
// tiles each way (barrier_mutants.sh runs this test with each barrier deleted). Emulator only:
// a GPU's limit is its own.
TEST(CudaOps, FlashAttentionOneStageWhereSharedMemoryIsShort) {
    MAKE_TWIN(t);
    for (DType dt : {DType::bf16, DType::f16})
        for (const FlashCase c : {FlashCase{1, 130, 1, 128}, FlashCase{1, 97, 4, 128, 2}}) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " T " << c.T << " Hkv " << c.kv());
            const int C = c.H * c.hd;
            Side& g = flash_side(t, cuda::TensorCoreFlash::mma);
            const FlashRun two = run_flash(g, dt, c.B, c.T, C, c.H, c.kv(), 73);
            const std::size_t h100 = shardlab::emu::set_shared_optin(99 * 1024);
            const FlashRun one = run_flash(g, dt, c.B, c.T, C, c.H, c.kv(), 73);
            shardlab::emu::set_shared_optin(h100);
            EXPECT_EQ(two.out_bits, one.out_bits);
            EXPECT_EQ(two.lse_bits, one.lse_bits);
            EXPECT_EQ(two.dqkv_bits, one.dqkv_bits);
            for (float x : one.dqkv) ASSERT_TRUE(std::isfinite(x)); // every element written
        }
}
#endif

// A head dim over the kernel's limit is refused, naming the limit and the way out.
TEST(CudaOps, FlashAttentionRefusesHeadDimsOver128) {
    MAKE_TWIN(t);
    Side& g = t.gpu;
    const int T = 3, H = 1, C = 136;
    const Tensor tq = g.make(std::vector<float>(T * 3 * C), DType::f32, {1, T, 3 * C});
    const Tensor to = g.make(std::vector<float>(T * C), DType::f32, {1, T, C});
    const Tensor tl = g.make(std::vector<float>(T), DType::f32, {1, H, T});
    try {
        g.ops->flash_attention_forward(g.s(), to, tl, tq, H, H);
        ADD_FAILURE() << "head dim 136 accepted";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("head dim 136"), std::string::npos) << what;
        EXPECT_NE(what.find("128"), std::string::npos) << what;
        EXPECT_NE(what.find("--attention materialize"), std::string::npos) << what;
    }
}

// GELU: CUDA's tanhf and the CPU's vectorised tanh differ by a few ulp; 16-bit outputs by one
// rounding of values that close.
// Sizes off and on the vector widths, pointers off the 16-byte grid (skip 1): the element path.
TEST(CudaOps, GeluForwardAndBackward) {
    MAKE_TWIN(t);
    for (const std::size_t n : {std::size_t(1000 * 3 + 7), std::size_t(3), std::size_t(64)})
        for (const std::int64_t skip : {0, 1})
            for (DType dt : kAll) {
                SCOPED_TRACE(testing::Message()
                             << dtype_name(dt) << " n " << n << " skip " << skip);
                const std::int64_t len = std::int64_t(n) + skip;
                const auto in = random_values(n + skip, 16, 4.0f),
                           dout = random_values(n + skip, 17);
                std::vector<float> out[2], din[2];
                for (int side = 0; side < 2; ++side) {
                    Side& x = side ? t.gpu : t.cpu;
                    const Tensor ti = skip_front(x.make(in, dt, {len}), skip);
                    const Tensor to =
                        skip_front(x.make(std::vector<float>(n + skip, NAN), dt, {len}), skip);
                    const Tensor td =
                        skip_front(x.make(std::vector<float>(n + skip, NAN), dt, {len}), skip);
                    x.ops->gelu_forward(x.s(), to, ti);
                    x.ops->gelu_backward(x.s(), td, ti, skip_front(x.make(dout, dt, {len}), skip));
                    out[side] = x.read(to), din[side] = x.read(td);
                }
                std::vector<double> bo(n), bd(n);
                for (std::size_t i = 0; i < n; ++i) {
                    bo[i] = 16 * 0x1p-24 * 4.0 + rounding(dt, out[0][i]);
                    bd[i] = 16 * 0x1p-24 * 2.0 + rounding(dt, din[0][i]);
                }
                expect_within(out[1], out[0], bo, "gelu");
                expect_within(din[1], din[0], bd, "gelu'");
            }
}

// The embedding and its backward, bit for bit: the CUDA backward sorts the positions by token on
// the device (tiles of 1024 merged by ranks) and sums each token's rows in position order, as the
// CPU does. Shapes: one tile; several tiles (1400 positions) with many repeats; every position the
// same token (one run across the tiles); runs of 1, 1, 2, 4, ..., 512 and 476 positions (token i's
// run is [2^(i-1), 2^i): the end of a run is found by a galloping search, whose probes land on
// either side of each) with C = 24, whole 16-byte chunks in every dtype (the rows' vector path),
// and short runs of that pattern with C = 5; C = 1 and C = 769 (no vector width divides them).
// Without a position table (Llama: wpe and dwpe without data) the output is the token's row itself.
TEST(CudaOps, EmbeddingIsTheCpusBitForBitBackwardIncluded) {
    MAKE_TWIN(t);
    struct Shape4 {
        int B, T, C, V, pattern; // pattern 0: (i * 7) % 11 * 4 % V; 1: i * i % V; 2: all V - 1;
                                 // 3: the bit width of i
    };
    for (const Shape4 sh :
         {Shape4{3, 7, 13, 50, 0}, Shape4{2, 700, 3, 37, 1}, Shape4{3, 400, 1, 5, 2},
          Shape4{2, 3, 769, 9, 0}, Shape4{1, 1500, 24, 12, 3}, Shape4{2, 5, 5, 12, 3}}) {
        const int B = sh.B, T = sh.T, C = sh.C, V = sh.V;
        std::vector<std::uint16_t> tokens(B * T);
        for (int i = 0; i < B * T; ++i)
            tokens[i] = std::uint16_t(sh.pattern == 0   ? (i * 7) % 11 * 4 % V
                                      : sh.pattern == 1 ? i * i % V
                                      : sh.pattern == 2 ? V - 1
                                                        : std::bit_width(unsigned(i)));
        for (DType dt : kAll)
            for (bool positions : {true, false}) {
                SCOPED_TRACE(testing::Message()
                             << dtype_name(dt) << " B " << B << " T " << T << " C " << C << " V "
                             << V << " positions " << positions);
                const auto wte = random_values(std::size_t(V) * C, 18),
                           wpe = random_values(T * C, 19);
                const auto dout = random_values(std::size_t(B) * T * C, 20);
                std::vector<char> out[2], dwte[2], dwpe[2];
                for (int side = 0; side < 2; ++side) {
                    Side& x = side ? t.gpu : t.cpu;
                    Allocation tok =
                        x.ctx->tracker().allocate(tokens.size() * 2, Category::workspace, x.s());
                    x.s().upload(tok.data(), tokens.data(), tokens.size() * 2);
                    const Tensor to = x.make(std::vector<float>(B * T * C), dt, {B, T, C});
                    const Tensor te = x.make(wte, dt, {V, C});
                    // A NaN with a payload in a row used: copied as stored. (A GPU's conversions
                    // would make it the canonical NaN; the emulator's keep the payload, so only
                    // a GPU run catches a copy through fp32.)
                    if (!positions) {
                        const std::uint32_t nan = dt == DType::f32    ? 0x7fc00123u
                                                  : dt == DType::bf16 ? 0x7fc3u
                                                                      : 0x7e03u;
                        x.s().upload(static_cast<char*>(te.data) +
                                         std::size_t(tokens[0]) * C * dtype_size(dt),
                                     &nan, dtype_size(dt)); // little-endian: the low bytes
                    }
                    const Tensor pe = positions ? x.make(wpe, dt, {T, C}) : Tensor{};
                    x.ops->embedding_forward(x.s(), to, tok.as<std::uint16_t>(), te, pe);
                    const Tensor dte = x.make(wte, dt, {V, C}); // +=
                    const Tensor dpe = positions ? x.make(wpe, dt, {T, C}) : Tensor{};
                    x.ops->embedding_backward(x.s(), dte, dpe, x.make(dout, dt, {B, T, C}),
                                              tok.as<std::uint16_t>());
                    out[side] = x.bits(to), dwte[side] = x.bits(dte);
                    dwpe[side] = positions ? x.bits(dpe) : std::vector<char>{};
                    if (!positions &&
                        side == 0) { // each output row is its token's row, bit for bit
                        const std::vector<char> rows = x.bits(te);
                        const std::size_t row = std::size_t(C) * dtype_size(dt);
                        for (int i = 0; i < B * T; ++i)
                            ASSERT_EQ(std::memcmp(out[0].data() + i * row,
                                                  rows.data() + tokens[i] * row, row),
                                      0)
                                << "position " << i;
                    }
                    x.memory.push_back(std::move(tok));
                }
                EXPECT_EQ(out[1], out[0]);
                EXPECT_EQ(dwte[1], dwte[0]);
                EXPECT_EQ(dwpe[1], dwpe[0]);
            }
    }
}

namespace {
// Rows of logits for the cross-entropy tests: N rows of V columns ld apart, from element `skip` of
// the buffer; the logits rise along each row (so the running maximum grows in almost every chunk),
// the padded columns V..ld-1 hold 40 and more. Row 1's target is the last column.
struct CrossEntropyCase {
    int N, V, ld;
    std::int64_t skip;
    std::vector<float> logits() const {
        auto z = random_values(std::size_t(N) * ld + skip, 21, 3.0f);
        for (int r = 0; r < N; ++r)
            for (int v = 0; v < ld; ++v) {
                float& x = z[skip + std::size_t(r) * ld + v];
                x = v < V ? x + 8.0f * float(v) / float(V) : 40.0f + float(v);
            }
        return z;
    }
    std::vector<std::uint16_t> targets() const {
        std::vector<std::uint16_t> t(N);
        for (int i = 0; i < N; ++i) t[i] = std::uint16_t(i == 1 ? V - 1 : (i * 13) % V);
        return t;
    }
};

struct CrossEntropyRun {
    double loss;
    std::vector<float> grad;
    std::vector<char> grad_bits;
};

// One cross_entropy call on side x (its gradient over the logits, scaled by `scale`).
CrossEntropyRun run_cross_entropy(Side& x, const CrossEntropyCase& c, DType dt, float scale) {
    const auto targets = c.targets();
    Allocation tg = x.ctx->tracker().allocate(c.N * 2, Category::workspace, x.s());
    x.s().upload(tg.data(), targets.data(), c.N * 2);
    const auto logits = c.logits();
    const Tensor whole = x.make(logits, dt, {std::int64_t(logits.size())});
    const Tensor z{static_cast<char*>(whole.data) + c.skip * dtype_size(dt), dt, Shape{c.N, c.ld},
                   whole.device};
    double* l = x.scalar<double>();
    x.ops->cross_entropy(x.s(), z, c.V, tg.as<std::uint16_t>(), scale, l);
    CrossEntropyRun run{x.value(l), x.read(z), x.bits(z)};
    x.memory.push_back(std::move(tg));
    return run;
}
} // namespace

// Cross-entropy: the row's log-sum-exp sums V exponentials in another order (the device's sum is
// also rescaled as its running maximum grows: one rounding per rescale, at most
// ceil(V / W / 256) + 13 of them per term, well below V), and CUDA's expf and logf are not the
// host's: a relative difference of a few V u in the loss; the gradient is one rounding of
// probabilities that close. With a padded vocabulary (ld > V) the padded columns would dominate
// the softmax if read, and their gradient is exactly 0 on both sides. Rows of widths off the
// vector widths (4 fp32, 8 16-bit) and logits starting off the 16-byte grid (skip) take the
// element path for some or all chunks; the long rows give each thread several chunks, and V =
// 17001 more than one batch of the chunks a thread loads at a time (8 x 256 chunks: 16,384
// columns in 16-bit, 8,192 in fp32), the last batch partly past V. A batch of eight chunks inside
// V takes a path of its own; V = 14403 (16-bit) and 7203 (fp32) end in chunk 1800, 3 columns of
// which are the vocabulary's, so that thread 8's batch (chunks 8, 264, ..., 1800) holds seven
// whole chunks and that partial one: the general path's. And GPT-2's rows: V = 50257 padded to
// 50304 (in fp32 more than the row copy in shared memory holds: the rest read twice).
TEST(CudaOps, CrossEntropyLossAndFusedGradient) {
    MAKE_TWIN(t);
    // N = 600: the mean's rows staged in three tiles of 256, the last short.
    for (const CrossEntropyCase c :
         {CrossEntropyCase{21, 67, 67, 0}, CrossEntropyCase{21, 67, 80, 0},
          CrossEntropyCase{9, 64, 64, 1}, CrossEntropyCase{9, 67, 80, 3},
          CrossEntropyCase{3, 5000, 5120, 0}, CrossEntropyCase{3, 4099, 4103, 1},
          CrossEntropyCase{2, 17001, 17016, 0}, CrossEntropyCase{2, 14403, 14416, 0},
          CrossEntropyCase{2, 7203, 7216, 0}, CrossEntropyCase{2, 50257, 50304, 0},
          CrossEntropyCase{600, 67, 72, 0}}) {
        const int N = c.N, V = c.V, ld = c.ld;
        for (DType dt : kAll)
            for (float scale : {0.0f, 1.0f / N}) {
                SCOPED_TRACE(testing::Message()
                             << dtype_name(dt) << " scale " << scale << " N " << N << " V " << V
                             << " ld " << ld << " skip " << c.skip);
                const CrossEntropyRun cpu = run_cross_entropy(t.cpu, c, dt, scale);
                const CrossEntropyRun gpu = run_cross_entropy(t.gpu, c, dt, scale);
                EXPECT_NEAR(gpu.loss, cpu.loss, 8.0 * V * 0x1p-24 * std::fabs(cpu.loss));
                std::vector<double> bound(cpu.grad.size());
                for (std::size_t i = 0; i < bound.size(); ++i)
                    bound[i] =
                        scale == 0.0f ? 0.0 : 8.0 * V * 0x1p-24 * scale + rounding(dt, cpu.grad[i]);
                expect_within(gpu.grad, cpu.grad, bound, "dlogits");
                for (int r = 0; r < N && scale != 0.0f; ++r)
                    for (int v = V; v < ld; ++v)
                        ASSERT_EQ(gpu.grad[std::size_t(r) * ld + v], 0.0f)
                            << "row " << r << " col " << v;
            }
    }
}

#ifdef SHARDLAB_CUDA_EMU
// Cross-entropy keeps as many of a row's chunks in shared memory between its two sweeps as the
// device's opt-in leaves room for with two blocks an SM (all of GPT-2's 16-bit rows on an H100,
// 57% of its fp32 ones), and reads the rest again. Whatever that number, the loss and the gradient
// have the same bits: the emulator's 227 KiB (an H100's) hold these rows whole but GPT-2's in
// fp32; an opt-in of 20,000 B holds 589 chunks of each, and one of 1,152 B none. Rows on and off
// the 16-byte grid. Emulator only: a GPU's opt-in is its own.
TEST(CudaOps, CrossEntropyIsTheSameBitsWhateverTheRowCacheHolds) {
    MAKE_TWIN(t);
    for (const CrossEntropyCase c :
         {CrossEntropyCase{2, 17001, 17016, 0}, CrossEntropyCase{3, 4099, 4103, 1},
          CrossEntropyCase{2, 50257, 50304, 0}})
        for (DType dt : kAll) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " V " << c.V);
            const CrossEntropyRun whole = run_cross_entropy(t.gpu, c, dt, 1.0f / c.N);
            for (const std::size_t optin : {std::size_t(20000), std::size_t(1152)}) {
                SCOPED_TRACE(testing::Message() << "opt-in " << optin);
                const std::size_t h100 = shardlab::emu::set_shared_optin(optin);
                const CrossEntropyRun part = run_cross_entropy(t.gpu, c, dt, 1.0f / c.N);
                shardlab::emu::set_shared_optin(h100);
                EXPECT_EQ(std::bit_cast<std::uint64_t>(part.loss),
                          std::bit_cast<std::uint64_t>(whole.loss));
                EXPECT_EQ(part.grad_bits, whole.grad_bits);
            }
        }
}
#endif

// Sizes below, at and off the vector widths (4 fp32, 8 16-bit), and pointers on and off the
// 16-byte grid: the vector and element paths give the CPU's bits.
TEST(CudaOps, ElementwiseOpsAreTheCpusBitForBit) {
    MAKE_TWIN(t);
    for (const std::size_t n : {std::size_t(1), std::size_t(3), std::size_t(65), std::size_t(4099)})
        for (const std::int64_t skip : {0, 1}) {
            const auto a = random_values(n + skip, 22), b = random_values(n + skip, 23, 1e3f);
            const std::int64_t len = std::int64_t(n + skip);
            for (DType dt : kAll) {
                SCOPED_TRACE(testing::Message()
                             << dtype_name(dt) << " n " << n << " skip " << skip);
                std::vector<char> acc[2], filled[2], zeros[2];
                for (int side = 0; side < 2; ++side) {
                    Side& x = side ? t.gpu : t.cpu;
                    const Tensor ta = skip_front(x.make(a, dt, {len}), skip);
                    x.ops->accumulate(x.s(), ta, skip_front(x.make(b, dt, {len}), skip));
                    acc[side] = x.bits(ta);
                    const Tensor f = skip_front(x.make(a, dt, {len}), skip);
                    x.ops->fill(x.s(), f, -1.375f);
                    filled[side] = x.bits(f);
                    x.ops->fill(x.s(), f, 0.0f);
                    zeros[side] = x.bits(f);
                }
                EXPECT_EQ(acc[1], acc[0]);
                EXPECT_EQ(filled[1], filled[0]);
                EXPECT_EQ(zeros[1], std::vector<char>(zeros[1].size(), 0));
                for (DType to : kAll) { // every conversion, rounding to nearest even
                    std::vector<char> conv[2];
                    for (int side = 0; side < 2; ++side) {
                        Side& x = side ? t.gpu : t.cpu;
                        const Tensor d =
                            skip_front(x.make(std::vector<float>(n + skip), to, {len}), skip);
                        x.ops->convert(x.s(), d, skip_front(x.make(b, dt, {len}), skip));
                        conv[side] = x.bits(d);
                    }
                    EXPECT_EQ(conv[1], conv[0]) << dtype_name(dt) << " -> " << dtype_name(to);
                }
            }
        }
}

// A GEMM with a bias and alpha = 0 is the bias broadcast to every row, exactly (the product adds
// +0): the bias kernel alone, bit for bit, over rows = batch * M and row lengths on and off the
// vector width (C = 1, 3, 65, 769, 64).
TEST(CudaOps, GemmBiasRowsAreTheBiasBitForBit) {
    MAKE_TWIN(t);
    for (const int N : {1, 3, 65, 769, 64})
        for (DType dt : kAll) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " N " << N);
            const int B = 3, M = 5, K = 2;
            const auto bias = random_values(std::size_t(N), 4);
            std::vector<char> out[2];
            for (int side = 0; side < 2; ++side) {
                Side& x = side ? t.gpu : t.cpu;
                const Tensor a = x.make(random_values(std::size_t(B) * M * K, 1), dt, {B, M, K});
                const Tensor b = x.make(random_values(std::size_t(B) * K * N, 2), dt, {B, K, N});
                const Tensor c =
                    x.make(std::vector<float>(std::size_t(B) * M * N, NAN), dt, {B, M, N});
                const Tensor tb = x.make(bias, dt, {N});
                x.ops->gemm(x.s(), a, false, b, false, c, 0.0f, 0.0f, &tb);
                out[side] = x.bits(c);
            }
            EXPECT_EQ(out[1], out[0]);
            std::vector<char> row(out[0].begin(), out[0].begin() + N * dtype_size(dt));
            for (int r = 1; r < B * M; ++r) // and every row is the bias
                EXPECT_TRUE(std::equal(row.begin(), row.end(),
                                       out[1].begin() + std::ptrdiff_t(r) * row.size()));
        }
}

// The squared norm: both sum squares in double (the GPU by a fixed tree, the CPU in order); the
// sums differ by far less than a float's ulp, so the float results are equal or adjacent. The GPU
// gives the same bits on every call, and they are those of its documented order
// (squared_norm_model).
namespace {
// A block of 256 threads' values folded as squared_norm.cu's block_reduce does (warp_reduce.h):
// in each warp the butterfly (lane l adds lane l ^ o's value, o = 16, 8, 4, 2, 1), then thread 0
// adds warps 1..7's lane 0 in order. Returns thread 0's value.
double block_tree(std::vector<double> v) {
    for (std::size_t w = 0; w < v.size(); w += 32)
        for (std::size_t o = 16; o > 0; o /= 2) {
            std::vector<double> next(v.begin() + std::ptrdiff_t(w),
                                     v.begin() + std::ptrdiff_t(w) + 32);
            for (std::size_t l = 0; l < 32; ++l) next[l] = v[w + l] + v[w + (l ^ o)];
            std::copy(next.begin(), next.end(), v.begin() + std::ptrdiff_t(w));
        }
    double total = v[0];
    for (std::size_t w = 32; w < v.size(); w += 32) total += v[w];
    return total;
}

// The CUDA squared norm's order (squared_norm.cu), in double on the host: a part of n elements is
// min(max(ceil(n / 256), 1), 1024) blocks of 256 threads; thread t of block b adds the squares of
// elements b 256 + t, then + blocks 256, ... in order; each block's threads fold by block_tree into
// its partial; the finish's thread i adds partials i, i + 256, ... (every part's blocks in order)
// and block_tree folds those. IEEE double adds and multiplies with no FMA on either side: the
// GPU's bits, or it sums in another order.
struct NormModel {
    std::vector<double> partials; // each block's
    float total;
};
NormModel squared_norm_model(const std::vector<std::vector<float>>& parts) {
    constexpr std::size_t kThreads = 256;
    std::vector<double> partials;
    for (const std::vector<float>& x : parts) {
        const std::size_t blocks = std::clamp<std::size_t>((x.size() + 255) / 256, 1, 1024);
        for (std::size_t b = 0; b < blocks; ++b) {
            std::vector<double> threads(kThreads, 0.0);
            for (std::size_t t = 0; t < kThreads; ++t)
                for (std::size_t i = b * kThreads + t; i < x.size(); i += blocks * kThreads) {
                    const double e = x[i];
                    threads[t] += e * e;
                }
            partials.push_back(block_tree(threads));
        }
    }
    std::vector<double> threads(kThreads, 0.0);
    for (std::size_t t = 0; t < kThreads; ++t)
        for (std::size_t i = t; i < partials.size(); i += kThreads) threads[t] += partials[i];
    return {partials, float(block_tree(threads))};
}
} // namespace

TEST(CudaOps, SquaredNormIsItsDocumentedOrderAndWithinAFloatUlpOfTheCpu) {
    MAKE_TWIN(t);
    // Odd sizes, an empty part, one over the 1024-block cap (fp32, fourth: its threads take 16
    // or 17 elements, a whole batch of loads ahead of the adds, in_order.h, and one more; fp32,
    // because squares of 16-bit values are sums exact in double in any order); then 36 more, so
    // that the parts take two launches (32 to a launch) whose partials meet in one sum. Under
    // ThreadSanitizer the large part (262,144 emulated threads, half a minute there) is left out:
    // the race detector sees the same code in the other parts. Part k is stored in kAll[k % 3].
    std::vector<std::size_t> sizes = {0, 1, 255};
#if !defined(__SANITIZE_THREAD__)
    sizes.push_back(4200000);
#endif
    for (std::size_t n : {257, 70001}) sizes.push_back(n);
    for (std::size_t i = 1; i <= 36; ++i) sizes.push_back(i * 37);
    // random_values' floats are multiples of 2^-24 or so (a uniform draw), whose squares add up
    // exactly in double in any order; each multiplied by 0.7 and rounded, the small ones get 24
    // bits of their own, and the order of a thread's adds shows in its sum.
    auto values = [](std::size_t n, std::uint64_t seed) {
        std::vector<float> v = random_values(n, seed);
        for (float& x : v) x *= 0.7f;
        return v;
    };
    float result[2] = {0, 0};
    std::vector<std::vector<float>> stored; // the parts' values as stored in their dtypes
    std::vector<double> partials;           // the GPU's, one per block
    for (int side = 0; side < 2; ++side) {
        Side& x = side ? t.gpu : t.cpu;
        std::vector<Tensor> parts;
        int k = 0;
        for (std::size_t n : sizes)
            parts.push_back(x.make(values(n, 30 + k), kAll[k % 3], {std::int64_t(n)})), ++k;
        float* out = x.scalar<float>();
        x.ops->squared_norm(x.s(), parts, out);
        result[side] = x.value(out);
        if (side == 1) {
            for (int again = 0; again < 3; ++again) {
                x.ops->squared_norm(x.s(), parts, out);
                EXPECT_EQ(x.value(out), result[1]) << "the same parts, the same bits";
            }
            for (const Tensor& p : parts) stored.push_back(x.read(p));
            // The kernels themselves, for their double partials (the float total rounds most
            // orders of the same terms alike; a partial's 53 bits do not).
            std::vector<cuda::NormInput> in;
            for (const Tensor& p : parts) in.push_back({p.data, p.numel(), p.dtype});
            const std::size_t count = cuda::squared_norm_scratch(in.data(), in.size());
            Allocation scratch =
                x.ctx->tracker().allocate(count * sizeof(double), Category::workspace, x.s());
            x.s().synchronize();
            cuda::squared_norm(nullptr, in.data(), in.size(), scratch.as<double>(), out);
            cuda::check_cuda(cudaDeviceSynchronize(), "squared_norm");
            partials.resize(count);
            cuda::check_cuda(cudaMemcpy(partials.data(), scratch.data(), count * sizeof(double),
                                        cudaMemcpyDeviceToHost),
                             "partials");
            x.memory.push_back(std::move(scratch));
        }
    }
    EXPECT_NEAR(result[1], result[0], ulp(DType::f32, result[0]));
    // And the GPU's own order, exactly: each thread's strided sum (its loads issued ahead of the
    // adds, in_order.h) and both trees.
    const NormModel model = squared_norm_model(stored);
    ASSERT_EQ(partials.size(), model.partials.size());
    for (std::size_t i = 0; i < partials.size(); ++i)
        ASSERT_EQ(partials[i], model.partials[i]) << "block " << i;
    EXPECT_EQ(result[1], model.total);
}

// --reproducible's fixed-point sums (model/kernels/fixed_point.h): the same integers, maxima,
// conversions back and sums of squares as the CPU, and as a host computation of round(x 2^e) —
// over sizes that take one block and several (the block count follows n; an integer sum and a
// maximum are exact in any order, so it changes no bit).
TEST(CudaOps, FixedPointSumsAreTheCpusBitForBit) {
    MAKE_TWIN(t);
    for (const std::size_t n : {std::size_t(1), std::size_t(257), std::size_t(70001)})
        for (DType dt : kAll) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " n " << n);
            std::vector<float> a = random_values(n, 41, 2.5f), b = random_values(n, 42, 1e-3f);
            a[n / 2] = 2.75f; // the largest magnitude, exactly representable in every dtype
            const int e = 40;
            std::vector<char> acc[2], back[2];
            float amax[2] = {0, 0};
            std::int64_t squares[2] = {0, 0};
            for (int side = 0; side < 2; ++side) {
                Side& x = side ? t.gpu : t.cpu;
                Allocation mem = x.ctx->tracker().allocate(n * 8, Category::workspace, x.s());
                const Tensor sum{mem.data(), DType::i64, {std::int64_t(n)}, mem.device()};
                x.ops->fill(x.s(), sum, 0.0f);
                float* m = x.scalar<float>();
                x.ops->fill(x.s(), {m, DType::f32, {1}, x.ctx->device()}, 0.0f);
                x.ops->fixed_accumulate(x.s(), sum, x.make(a, dt, {std::int64_t(n)}), e, m);
                x.ops->fixed_accumulate(x.s(), sum, x.make(b, dt, {std::int64_t(n)}), e, m);
                acc[side] = x.bits(sum);
                amax[side] = x.value(m);
                const Tensor mean = x.make(std::vector<float>(n), dt, {std::int64_t(n)});
                x.ops->fixed_to_float(x.s(), mean, sum, e, 2.0);
                back[side] = x.bits(mean);
                std::int64_t* q = x.scalar<std::int64_t>();
                x.ops->fill(x.s(), {q, DType::i64, {1}, x.ctx->device()}, 0.0f);
                x.ops->fixed_squares(x.s(), mean, 20, q);
                squares[side] = x.value(q);
                x.memory.push_back(std::move(mem));
            }
            EXPECT_EQ(acc[1], acc[0]);
            EXPECT_EQ(back[1], back[0]);
            EXPECT_EQ(amax[1], amax[0]);
            EXPECT_EQ(squares[1], squares[0]);
            EXPECT_EQ(amax[0], 2.75f);
            // Independently: the stored values times 2^40, rounded to nearest (|x| 2^40 < 2^53,
            // so double holds them exactly before the rounding), summed as integers.
            auto stored = [dt](float v) { // as dtype dt holds it
                char raw[4];
                store_from_f32(raw, dt, 0, v);
                return double(load_as_f32(raw, dt, 0));
            };
            std::vector<std::int64_t> want(n);
            for (std::size_t i = 0; i < n; ++i)
                want[i] = std::llrint(std::ldexp(stored(a[i]), e)) +
                          std::llrint(std::ldexp(stored(b[i]), e));
            EXPECT_EQ(std::memcmp(acc[0].data(), want.data(), n * 8), 0);
        }
}

// One call over many tensors gives the CPU's bits, tensor for tensor: 100 of them, the gradients'
// dtype changing every 34 (a launch takes one dtype and at most 32 tensors: launches of 32 and 2,
// 32 and 2, then exactly 32); sizes around the kernel's 256-element blocks, one empty; a weight
// decay on every other. The tensors are views of one allocation each for master, m, v and params,
// as an update's segments are.
TEST(CudaOps, AdamWIsTheCpusUpdateBitForBit) {
    MAKE_TWIN(t);
    std::vector<std::size_t> sizes, offsets;
    std::size_t total = 0;
    for (std::size_t i = 0; i < 100; ++i) {
        sizes.push_back(i == 0 ? 3001 : i == 9 ? 0 : (i * 97) % 600 + 1);
        offsets.push_back(total);
        total += sizes.back();
    }
    for (int params = 0; params < 3; ++params) { // none, fp32, bf16
        SCOPED_TRACE(testing::Message() << "params " << params);
        const DType pt = params == 2 ? DType::bf16 : DType::f32;
        std::vector<char> w[2], m[2], v[2], p[2];
        for (int side = 0; side < 2; ++side) {
            Side& x = side ? t.gpu : t.cpu;
            const Shape all{std::int64_t(total)};
            const Tensor tw = x.make(random_values(total, 40), DType::f32, all);
            const Tensor tm = x.make(random_values(total, 41, 0.1f), DType::f32, all);
            std::vector<float> v0 = random_values(total, 42, 0.01f);
            for (float& e : v0) e = std::fabs(e);
            const Tensor tv = x.make(v0, DType::f32, all);
            const Tensor tp = x.make(std::vector<float>(total), pt, all);
            for (int step = 1; step <= 3; ++step) {
                std::vector<AdamWTensor> tensors;
                for (std::size_t i = 0; i < sizes.size(); ++i) {
                    const Shape s{std::int64_t(sizes[i])};
                    const DType gt = kAll[i / 34];
                    tensors.push_back({tw.view(offsets[i], s), tm.view(offsets[i], s),
                                       tv.view(offsets[i], s),
                                       x.make(random_values(sizes[i], 43 + step + int(i)), gt, s),
                                       params ? tp.view(offsets[i], s) : Tensor{},
                                       adamw_step(AdamWConfig{}, 1e-3f, step, i % 2 == 0, 0.5f)});
                }
                x.ops->adamw(x.s(), tensors);
            }
            w[side] = x.bits(tw), m[side] = x.bits(tm), v[side] = x.bits(tv);
            p[side] = x.bits(tp);
        }
        EXPECT_EQ(w[1], w[0]);
        EXPECT_EQ(m[1], m[0]);
        EXPECT_EQ(v[1], v[0]);
        EXPECT_EQ(p[1], p[0]);
    }
}

namespace {
// A query of an event the stream has not reached leaves "not ready" as CUDA's last error; the
// stream layer must clear it, or the next kernel launch's check reports it as a launch failure.
TEST(CudaStreams, AnUnfinishedEventDoesNotFailTheNextLaunch) {
    MAKE_TWIN(t);
    Side& g = t.gpu;
    std::promise<void> open;
    std::shared_future<void> gate = open.get_future().share();
    g.s().enqueue([gate] { gate.wait_for(std::chrono::seconds(10)); }); // holds the stream
    const EventPtr e = g.s().record();
    EXPECT_FALSE(e->query());
    const Tensor x = g.make(std::vector<float>(33, 1.0f), DType::f32, {33});
    EXPECT_NO_THROW(g.ops->fill(g.s(), x, 2.0f));
    open.set_value();
    const std::vector<float> twos(33, 2.0f);
    std::vector<char> want(twos.size() * sizeof(float));
    std::memcpy(want.data(), twos.data(), want.size());
    EXPECT_EQ(g.bits(x), want);
}

// Small uploads go through the stream's pinned slots (core/cuda/upload_staging.h), each rewritten
// once the stream has passed its last copy. On a stream that never gets there, the upload that
// needs such a slot is reported by the device watchdog after the stall timeout, as every host wait
// for a device is, instead of blocking the rank for good.
TEST(CudaStreams, AnUploadWaitingForAStalledStreamIsReported) {
    MAKE_TWIN(t);
    Side& g = t.gpu;
    auto* watched = dynamic_cast<WatchedStream*>(&g.s());
    ASSERT_NE(watched, nullptr);
    const Tensor x = g.make(std::vector<float>(16, 0.0f), DType::f32, {16});
    const std::vector<float> host(16, 1.0f);
    watched->set_stall_timeout(0.5);
    std::promise<void> open;
    std::shared_future<void> gate = open.get_future().share();
    g.s().enqueue([gate] { gate.wait_for(std::chrono::seconds(60)); }); // the stall
    // 20 uploads: more than the slots (8). On another thread, so that one blocking for good fails
    // the test instead of hanging it.
    std::future<std::string> uploads = std::async(std::launch::async, [&] {
        try {
            for (int i = 0; i < 20; ++i) g.s().upload(x.data, host.data(), 16 * sizeof(float));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("every upload returned");
    });
    const bool ended = uploads.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    open.set_value(); // the stream runs on (and a blocked upload returns)
    ASSERT_TRUE(ended) << "an upload waited 20 s for the stalled stream (watchdog limit 0.5 s)";
    const std::string what = uploads.get();
    EXPECT_NE(what.find("device watchdog: waited"), std::string::npos) << what;
    watched->set_stall_timeout(0);
}
} // namespace

// --- the linear layers' cuBLASLt epilogues ------------------------------------------------------

namespace {
// One linear step's outputs on one side, as floats and as bits.
struct LinearOut {
    std::vector<float> x, y, db;
    std::vector<char> bits;
};

constexpr double kU = 0x1p-24; // fp32's unit roundoff

} // namespace

// The fused linear steps (Ops::linear_gelu_forward, linear_param_grads, linear_gelu_backward) on
// the CUDA backend's cuBLASLt epilogues and on its separate kernels (LinearPath::separate), against
// the CPU's separate ops. Bounds: the GEMM's fp32 accumulation in another order (2 (K + 2) u of
// the magnitudes, as GemmMatchesTheCpu), GELU and its derivative (|gelu'| <= 1.13, fp32 tanh
// within 16 u of |x| + 1; a GPU's cuBLASLt's within 2^-10), and for 16-bit storage one more ulp of
// an intermediate where one side rounds it and the other does not (GELU of the unrounded pre, a
// product rounded before its bias, a bias gradient before its add), carried through GELU. Bias
// gradients sum those values: the sum of their bounds plus 2 (rows + 1) u of their magnitudes.
// Which results are equal bit for bit, and where, is said at the end. N = 13 is not a multiple of
// 8 (cuBLASLt's rule for the aux matrix): the GELU forward falls back to the separate kernels.
TEST(CudaOps, LinearEpiloguesMatchTheCpuAndTheSeparateKernels) {
    MAKE_TWIN(t);
    const std::unique_ptr<Ops> separate = make_cuda_ops(t.gpu.ctx->tracker(), LinearPath::separate);
    for (const int N : {40, 13})
        for (DType dt : kAll) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " N " << N);
            const int R = 37, K = 24;
            const auto a = random_values(std::size_t(R) * K, 40),
                       w = random_values(std::size_t(K) * N, 41),
                       bias = random_values(std::size_t(N), 42),
                       dout = random_values(std::size_t(R) * N, 43),
                       pre = random_values(std::size_t(R) * K, 44, 3.0f),
                       dw0 = random_values(std::size_t(K) * N, 45),
                       db0 = random_values(std::size_t(N), 46),
                       dbk0 = random_values(std::size_t(K), 47);
            LinearOut fwd[3], grads[3], bwd[3]; // cpu, cuBLASLt, separate
            std::vector<float> ha, hw, hdout, hpre;
            for (int side = 0; side < 3; ++side) {
                Side& x = side ? t.gpu : t.cpu;
                Ops& ops = side == 2 ? *separate : *x.ops;
                const Tensor ta = x.make(a, dt, {R, K}), tw = x.make(w, dt, {K, N}),
                             tb = x.make(bias, dt, {N}), tdout = x.make(dout, dt, {R, N}),
                             tpre_in = x.make(pre, dt, {R, K});
                const Tensor tpre = x.make(std::vector<float>(std::size_t(R) * N, NAN), dt, {R, N}),
                             tout = x.make(std::vector<float>(std::size_t(R) * N, NAN), dt, {R, N});
                ops.linear_gelu_forward(x.s(), ta, tw, tb, tpre, tout);
                fwd[side] = {x.read(tpre), x.read(tout), {}, x.bits(tout)};
                const Tensor tdw = x.make(dw0, dt, {K, N}), tdb = x.make(db0, dt, {N});
                ops.linear_param_grads(x.s(), ta, tdout, tdw, tdb);
                grads[side] = {x.read(tdw), {}, x.read(tdb), x.bits(tdb)};
                const Tensor tdin = x.make(std::vector<float>(std::size_t(R) * K, NAN), dt, {R, K}),
                             tdbk = x.make(dbk0, dt, {K});
                ops.linear_gelu_backward(x.s(), tdout, tw, tpre_in, tdin, tdbk);
                bwd[side] = {x.read(tdin), {}, x.read(tdbk), x.bits(tdin)};
                if (side == 0)
                    ha = x.read(ta), hw = x.read(tw), hdout = x.read(tdout), hpre = x.read(tpre_in);
            }
            // A GPU's cuBLAS may round a 16-bit product to C's type before adding the bias or
            // beta C, on either path (seen on an H200, cuBLAS 13.1: gemm_epilogue.h): one rounding
            // of the product more. cuBLASLt's bias gradient (BGRADA) is rounded to 16 bits before
            // its add (`extra`, the cuBLASLt side): one rounding of the sum more.
            // Forward: pre = a w + bias; out = gelu(pre), its tanh within tanh_err (|pre| + 1).
            const std::vector<double> bpre = [&] {
                const std::vector<double> mag =
                    abs_product(ha.data(), false, hw.data(), false, R, K, N);
                std::vector<double> b(mag.size());
                for (int r = 0; r < R; ++r)
                    for (int n = 0; n < N; ++n) {
                        const std::size_t o = std::size_t(r) * N + n;
                        b[o] = 2.0 * (K + 2) * kU * (mag[o] + std::fabs(bias[n])) +
                               rounding(dt, mag[o]) + rounding(dt, fwd[0].x[o]);
                    }
                return b;
            }();
            auto out_bounds = [&](double tanh_err) {
                std::vector<double> b(bpre.size());
                for (std::size_t o = 0; o < b.size(); ++o)
                    b[o] = 1.13 * bpre[o] + tanh_err * (std::fabs(fwd[0].x[o]) + 1) +
                           rounding(dt, fwd[0].y[o]);
                return b;
            };
            // Parameter gradients: dw += a^T dout; db += column sums of dout.
            std::vector<double> bdw(std::size_t(K) * N), bdb(static_cast<std::size_t>(N)),
                db_sum_mag(static_cast<std::size_t>(N));
            const std::vector<double> dw_mag =
                abs_product(ha.data(), true, hdout.data(), false, K, R, N); // a^T dout
            for (std::size_t o = 0; o < bdw.size(); ++o)
                bdw[o] = 2.0 * (R + 2) * kU * (dw_mag[o] + std::fabs(dw0[o])) +
                         rounding(dt, dw_mag[o]) + rounding(dt, grads[0].x[o]);
            for (int n = 0; n < N; ++n) {
                double mag = 0;
                for (int r = 0; r < R; ++r) mag += std::fabs(hdout[std::size_t(r) * N + n]);
                db_sum_mag[n] = mag;
                bdb[n] =
                    2.0 * (R + 1) * kU * (mag + std::fabs(db0[n])) + rounding(dt, grads[0].db[n]);
            }
            // Backward through GELU: din = gelu'(pre) (dout w^T); dbk += column sums of din.
            struct GeluBackBounds {
                std::vector<double> din, dbk;
            };
            const std::vector<double> din_mag =
                abs_product(hdout.data(), false, hw.data(), true, R, N, K); // dout w^T
            auto back_bounds = [&](double tanh_err) {
                GeluBackBounds b{std::vector<double>(std::size_t(R) * K),
                                 std::vector<double>(static_cast<std::size_t>(K))};
                for (int k = 0; k < K; ++k) {
                    double sum_bound = 0, sum_mag = 0;
                    for (int r = 0; r < R; ++r) {
                        const std::size_t o = std::size_t(r) * K + k;
                        const double mag = din_mag[o];
                        const double g_bound = 2.0 * (N + 2) * kU * mag + rounding(dt, mag);
                        b.din[o] = 1.13 * g_bound + tanh_err * mag * (std::fabs(hpre[o]) + 1) +
                                   rounding(dt, bwd[0].x[o]);
                        sum_bound += b.din[o], sum_mag += std::fabs(bwd[0].x[o]) + b.din[o];
                    }
                    b.dbk[k] = sum_bound + 2.0 * (R + 1) * kU * (sum_mag + std::fabs(dbk0[k])) +
                               rounding(dt, bwd[0].db[k]);
                }
                return b;
            };
            for (int side = 1; side < 3; ++side) {
                SCOPED_TRACE(side == 1 ? "cuBLASLt" : "separate kernels");
                // The kernels' tanhf: within 16 u. cuBLASLt's GELU on a GPU is its own and its
                // accuracy undocumented: it is allowed tanh.approx.f32's, 2^-10.99 relative (PTX
                // ISA), rounded up to 2^-10. Under the emulator it is the kernels' formula.
                const double tanh_err = side == 1 && !kEmulated ? 0x1p-10 : 16 * kU;
                const bool extra = side == 1;
                // The GELU backward takes the separate kernels on both paths: their tanhf.
                const GeluBackBounds back = back_bounds(16 * kU);
                expect_within(fwd[side].x, fwd[0].x, bpre, "pre-GELU");
                expect_within(fwd[side].y, fwd[0].y, out_bounds(tanh_err), "gelu(a w + b)");
                expect_within(grads[side].x, grads[0].x, bdw, "dw");
                std::vector<double> bdb_side = bdb;
                for (int n = 0; n < N && extra; ++n) bdb_side[n] += rounding(dt, db_sum_mag[n]);
                expect_within(grads[side].db, grads[0].db, bdb_side, "db");
                expect_within(bwd[side].x, bwd[0].x, back.din, "din");
                expect_within(bwd[side].db, bwd[0].db, back.dbk, "db of the GELU's linear");
            }
            if (dt != DType::f32 && N == 40) { // the epilogue ran: GELU of the unrounded pre
                EXPECT_NE(fwd[1].bits, fwd[2].bits);
            }
            // cuBLASLt's DGELU_BGRAD was slower than the separate kernels on the H200: both paths
            // run the same calls for the GELU backward, so the same bits.
            EXPECT_EQ(bwd[1].bits, bwd[2].bits);
            EXPECT_EQ(bwd[1].db, bwd[2].db);
            if (!kEmulated) continue;
            // Under the emulator cuBLASLt's GELU_AUX_BIAS adds the bias as the separate kernels
            // do, before the one rounding, its GELU is the kernels' formula and its bias gradients
            // the same sums in the same order: equal bits. Not in 16-bit where cuBLASLt rounds
            // once more: the BIAS epilogue of the GELU forward's fallback (N = 13) and the bias
            // gradients. A GPU's cuBLASLt picks its own kernels: only the bounds above hold there.
            EXPECT_EQ(grads[1].x, grads[2].x);
            if (dt == DType::f32 || N == 40) {
                EXPECT_EQ(fwd[1].x, fwd[2].x);
            }
            if (dt == DType::f32) {
                EXPECT_EQ(fwd[1].bits, fwd[2].bits);
                EXPECT_EQ(grads[1].bits, grads[2].bits);
            }
        }
}

// linear_gelu_backward on CUDA runs the GELU backward and the bias gradient as one kernel
// (gelu.cu; on both linear paths): the bits of Ops's three calls (the GEMM, gelu_backward,
// bias_grad), in every dtype, with rows over three of the column sums' chunks and columns over
// three of its 128-column blocks (the last of each partial).
TEST(CudaOps, GeluBackwardWithItsBiasGradientIsTheSeparateKernelsBitForBit) {
    MAKE_TWIN(t);
    Side& g = t.gpu;
    const int R = 300, K = 300, N = 24;
    for (DType dt : kAll) {
        SCOPED_TRACE(dtype_name(dt));
        std::vector<char> din[2], db[2];
        for (int way = 0; way < 2; ++way) {
            const Tensor dout = g.make(random_values(std::size_t(R) * N, 50), dt, {R, N}),
                         w = g.make(random_values(std::size_t(K) * N, 51), dt, {K, N}),
                         pre = g.make(random_values(std::size_t(R) * K, 52, 3.0f), dt, {R, K}),
                         dbias = g.make(random_values(std::size_t(K), 53), dt, {K}),
                         grad = g.make(std::vector<float>(std::size_t(R) * K, NAN), dt, {R, K});
            if (way == 0) {
                g.ops->linear_gelu_backward(g.s(), dout, w, pre, grad, dbias);
            } else {
                g.ops->gemm(g.s(), dout, false, w, true, grad, 1.0f, 0.0f);
                g.ops->gelu_backward(g.s(), grad, pre, grad);
                g.ops->bias_grad(g.s(), dbias, grad);
            }
            din[way] = g.bits(grad), db[way] = g.bits(dbias);
        }
        EXPECT_EQ(din[0], din[1]);
        EXPECT_EQ(db[0], db[1]);
    }
}

// A bias view off the 16-byte grid (as in a unit whose offsets are not multiples of 16 bytes: a
// bf16 model of hidden 20, say) is never handed to a cuBLASLt epilogue, which would fault on a GPU
// (the emulator reports it): the cuBLASLt path runs the separate kernels, so its bits are
// LinearPath::separate's.
TEST(CudaOps, MisalignedBiasTakesTheSeparateKernels) {
    MAKE_TWIN(t);
    const std::unique_ptr<Ops> separate = make_cuda_ops(t.gpu.ctx->tracker(), LinearPath::separate);
    const int R = 37, K = 24, N = 40;
    const auto a = random_values(std::size_t(R) * K, 50), w = random_values(std::size_t(K) * N, 51),
               bias = random_values(std::size_t(N) + 1, 52);
    const std::vector<float> nans(std::size_t(R) * N, NAN);
    Side& g = t.gpu;
    for (DType dt : kAll) {
        SCOPED_TRACE(dtype_name(dt));
        const Tensor ta = g.make(a, dt, {R, K}), tw = g.make(w, dt, {K, N});
        const Tensor tb = g.make(bias, dt, {N + 1}).view(1, {N}); // one element past the grid
        std::vector<char> out[2][3];                              // cuBLASLt, separate
        for (int side = 0; side < 2; ++side) {
            Ops& ops = side ? *separate : *g.ops;
            const Tensor c = g.make(nans, dt, {R, N}), pre = g.make(nans, dt, {R, N}),
                         act = g.make(nans, dt, {R, N});
            ops.gemm(g.s(), ta, false, tw, false, c, 1.0f, 0.0f, &tb);
            ops.linear_gelu_forward(g.s(), ta, tw, tb, pre, act);
            out[side][0] = g.bits(c), out[side][1] = g.bits(pre), out[side][2] = g.bits(act);
        }
        EXPECT_EQ(out[0][0], out[1][0]) << "a w + bias";
        EXPECT_EQ(out[0][1], out[1][1]) << "pre-GELU";
        EXPECT_EQ(out[0][2], out[1][2]) << "gelu(a w + bias)";
    }
}
