// Llama's ops on the CUDA backend (issue 25) against the CPU backend's, on the same random inputs:
// RMSNorm, rotary position embedding, SwiGLU, forward and backward, every storage dtype, at sizes
// no vector width or warp divides (and single rows). The CPU kernels are checked against float64
// in test_llama_kernels.cpp; here the CUDA kernels are held to the CPU's within bounds argued from
// fp32 precision (u = 2^-24), and bit for bit where both compute the same fp32 operations in the
// same order. Runs on a GPU or under the SIMT emulator (tests/cuda_twin.h); compiled into the
// test_cuda_ops binary, so everything that runs that binary runs these (tests/CMakeLists.txt).
#include "tests/cuda_twin.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace shardlab;
using namespace shardlab::cuda_test;

namespace {
constexpr double u = 0x1p-24;

// The values of raw bits of dtype dt.
std::vector<float> bit_values(const std::vector<char>& raw, DType dt, std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = load_as_f32(raw.data(), dt, i);
    return v;
}
} // namespace

// RMSNorm. The sum of squares is C positive terms summed in another order (a butterfly across
// the warp's lanes on the GPU, index order on the CPU): each within (C - 1) u of the exact sum,
// relative, so the two within 2 C u; the mean, eps, sqrt and division add a rounding each, so
// rstd within (C + 4) u relative — bounded by (2 C + 8) u. Each output is w * (x * r), two
// roundings more on each side: (2 C + 12) u |w x r|, doubled as a margin, and a 16-bit output one
// rounding of values that close. Backward from the CPU's rstd on both sides: the terms r w dy and
// x r^3 are the same fp32 operations, only mean(w dy x) differs — C signed terms summed in
// another order, within 2 (C + 2) u A of each other (A = mean |w dy x|) — so din within
// (2 C + 8) u |x| r^3 A plus a rounding of each of the three terms and of the sum, bounded by
// (4 C + 16) u (|din0| + r |w dy| + |x| r^3 A). dweight sums one chunk of rows (N <= 128) in row
// order from zero and adds the sum once, on both sides: bit for bit.
// C = 1, 3, 65, 77, 769: rows no vector width divides (chunks off the 16-byte grid); C = 2000:
// longer than the row cache (the rest read again from memory). N = 1: one row, one warp.
TEST(CudaLlamaOps, RmsNormForwardAndBackward) {
    MAKE_TWIN(t);
    const float eps = 1e-5f;
    for (const int N : {23, 1})
        for (const int C : {77, 1, 3, 65, 769, 2000})
            for (DType dt : kAll) {
                SCOPED_TRACE(testing::Message() << dtype_name(dt) << " N " << N << " C " << C);
                const std::size_t NC = std::size_t(N) * C;
                const auto in = random_values(NC, 7, 2.0f), w = random_values(C, 8);
                const auto dout = random_values(NC, 10), din0 = random_values(NC, 11);
                const auto dw0 = random_values(C, 12);
                std::vector<float> out[2], rstd[2], din[2], xs, ws, dys, d0s;
                std::vector<char> dw[2];
                for (int side = 0; side < 2; ++side) {
                    Side& x = side ? t.gpu : t.cpu;
                    const Tensor tin = x.make(in, dt, {N, C}), tw = x.make(w, dt, {C});
                    const Tensor tout = x.make(std::vector<float>(NC, NAN), dt, {N, C});
                    const Tensor tr = x.make(std::vector<float>(N, NAN), DType::f32, {N});
                    x.ops->rmsnorm_forward(x.s(), tout, tr, tin, tw, eps);
                    out[side] = x.read(tout), rstd[side] = x.read(tr);
                    const Tensor sr = x.make(rstd[0], DType::f32, {N}); // the CPU's, both sides
                    const Tensor tdin = x.make(din0, dt, {N, C}), tdw = x.make(dw0, dt, {C});
                    const Tensor tdout = x.make(dout, dt, {N, C});
                    x.ops->rmsnorm_backward(x.s(), tdin, tdw, tdout, tin, tw, sr);
                    din[side] = x.read(tdin), dw[side] = x.bits(tdw);
                    if (side == 0) // the inputs as the kernels see them (rounded to dt)
                        xs = x.read(tin), ws = x.read(tw), dys = x.read(tdout), d0s = din0;
                }
                std::vector<double> rstd_bound(N), out_bound(NC), din_bound(NC);
                for (int r = 0; r < N; ++r) {
                    const double rs = rstd[0][r];
                    rstd_bound[r] = (2.0 * C + 8) * u * rs;
                    double A = 0;
                    for (int c = 0; c < C; ++c) {
                        const std::size_t i = std::size_t(r) * C + c;
                        A += std::fabs(double(ws[c]) * dys[i] * xs[i]);
                    }
                    A /= C;
                    for (int c = 0; c < C; ++c) {
                        const std::size_t i = std::size_t(r) * C + c;
                        out_bound[i] = 2 * (2.0 * C + 12) * u * std::fabs(ws[c] * xs[i]) * rs +
                                       rounding(dt, out[0][i]);
                        const double terms = std::fabs(d0s[i]) + rs * std::fabs(ws[c] * dys[i]) +
                                             std::fabs(xs[i]) * rs * rs * rs * A;
                        din_bound[i] = (4.0 * C + 16) * u * terms + rounding(dt, din[0][i]);
                    }
                }
                expect_within(rstd[1], rstd[0], rstd_bound, "rstd");
                expect_within(out[1], out[0], out_bound, "out");
                expect_within(din[1], din[0], din_bound, "din");
                EXPECT_EQ(dw[1], dw[0]) << "dweight";
            }
}

// dweight over 300 rows: three chunks, summed in parallel and then in chunk order on the GPU, in
// row order on the CPU. Each is within (N + 1) u sum |dy x r| of the exact sum (the partial sums
// and the add into dweight), the two within twice that; a 16-bit result one rounding more. The
// GPU's is exactly the chunked order's (chunked_column_sum).
TEST(CudaLlamaOps, RmsNormWeightGradOverManyChunksIsTheChunkedSumWithinTheReassociationBound) {
    MAKE_TWIN(t);
    const int N = 300, C = 37;
    for (DType dt : kAll) {
        SCOPED_TRACE(dtype_name(dt));
        const std::size_t NC = std::size_t(N) * C;
        const auto in = random_values(NC, 21, 2.0f), w = random_values(C, 22);
        const auto dout = random_values(NC, 23), rstd = random_values(N, 24, 1.5f);
        const auto dw0 = random_values(C, 25);
        std::vector<float> dw[2], xs, dys, dw_stored;
        for (int side = 0; side < 2; ++side) {
            Side& x = side ? t.gpu : t.cpu;
            const Tensor tin = x.make(in, dt, {N, C}), tdout = x.make(dout, dt, {N, C});
            const Tensor tdin = x.make(std::vector<float>(NC, 0.0f), dt, {N, C});
            const Tensor tdw = x.make(dw0, dt, {C});
            if (side == 0) xs = x.read(tin), dys = x.read(tdout), dw_stored = x.read(tdw);
            x.ops->rmsnorm_backward(x.s(), tdin, tdw, tdout, tin, x.make(w, dt, {C}),
                                    x.make(rstd, DType::f32, {N}));
            dw[side] = x.read(tdw);
        }
        for (int c = 0; c < C; ++c) { // the kernels' order of sums, exactly
            const auto at = [&](int r) { return std::size_t(r) * C + c; };
            EXPECT_EQ(dw[1][c],
                      chunked_column_sum(dw_stored[c], N, dt,
                                         [&](int r) { return dys[at(r)] * xs[at(r)] * rstd[r]; }))
                << "dweight column " << c;
        }
        std::vector<double> bound(C);
        for (int c = 0; c < C; ++c) {
            double sum = std::fabs(dw0[c]);
            for (int r = 0; r < N; ++r) {
                const std::size_t i = std::size_t(r) * C + c;
                sum += std::fabs(double(dys[i]) * xs[i] * rstd[r]);
            }
            bound[c] = 2.0 * (N + 1) * u * sum + rounding(dt, dw[0][c]);
        }
        expect_within(dw[1], dw[0], bound, "dweight");
    }
}

// RoPE, in place inside rows wider than the heads it rotates (q's heads then k's, as in a fused
// qkv row; the rest, v, untouched). Each element is a * c - b * s in fp32 from the same fp32 cos
// and sin: under the emulator the GPU's angle, cos and sin are the CPU's own double libm calls, so
// the result is the CPU's bit for bit. On a GPU, CUDA's double pow, cos and sin are within 2 ulp of
// double, so the fp32 cos or sin may differ from the CPU's by one fp32 ulp (only where the double
// lies that close to an fp32 rounding boundary): then the element within 2 u (|a| + |b|), plus
// the roundings of the two products and the sum on each side, 6 u (|a| + |b|): 8 u (|a| + |b|),
// and a 16-bit one rounding more.
// Head dims 2, 6, 10 (pairs no vector width divides), 1 and 3 rotated heads, seq 7, 5, 1 and a
// long one (1000: large angles), theta 10000 (Llama 2) and 500000 (Llama 3), and Llama 3's
// scaling (over a context of 64, so the seq-1000 case turns every band of the rule).
TEST(CudaLlamaOps, RopeIsTheCpusBitForBit) {
    MAKE_TWIN(t);
    struct Case {
        int batch, seq, heads, head_dim, width;
    };
    const Case cases[] = {{2, 7, 3, 6, 4 * 6},
                          {1, 1, 1, 10, 3 * 10},
                          {3, 5, 1, 2, 3},
                          {2, 9, 3, 10, 5 * 10 + 1},
                          {1, 1000, 1, 6, 6}};
    for (const Case& k : cases)
        for (const Rope& theta : {Rope{10000.0f}, Rope{500000.0f},
                                  Rope{500000.0f, 32.0f, 1.0f, 4.0f, 64}}) // Llama 3's scaling
            for (DType dt : kAll) {
                SCOPED_TRACE(testing::Message()
                             << dtype_name(dt) << " batch " << k.batch << " seq " << k.seq
                             << " heads " << k.heads << " head_dim " << k.head_dim << " width "
                             << k.width << " theta " << theta.theta << " factor " << theta.factor);
                const int rows = k.batch * k.seq;
                const std::size_t n = std::size_t(rows) * k.width;
                const auto x0 = random_values(n, 31, 3.0f), g0 = random_values(n, 32);
                std::vector<char> y[2], dx[2], x_in;
                for (int side = 0; side < 2; ++side) {
                    Side& x = side ? t.gpu : t.cpu;
                    const Tensor tx = x.make(x0, dt, {k.batch, k.seq, k.width});
                    const Tensor tg = x.make(g0, dt, {rows, k.width});
                    if (side == 0) x_in = x.bits(tx);
                    x.ops->rope_forward(x.s(), tx, k.seq, k.heads, k.head_dim, theta);
                    x.ops->rope_backward(x.s(), tg, k.seq, k.heads, k.head_dim, theta);
                    y[side] = x.bits(tx), dx[side] = x.bits(tg);
                }
                // Past the rotated heads every element is the input's, on the GPU too.
                const std::size_t es = dtype_size(dt), rotated = std::size_t(k.heads) * k.head_dim;
                for (int r = 0; r < rows; ++r) {
                    const std::size_t at = (std::size_t(r) * k.width + rotated) * es;
                    const std::size_t len = (k.width - rotated) * es;
                    ASSERT_EQ(std::memcmp(y[1].data() + at, x_in.data() + at, len), 0) << r;
                }
                if (kEmulated) { // the GPU's double pow, cos and sin are the CPU's
                    EXPECT_EQ(y[1], y[0]) << "forward";
                    EXPECT_EQ(dx[1], dx[0]) << "backward";
                    continue;
                }
                for (int pass = 0; pass < 2; ++pass) {
                    const std::vector<char>* got = pass ? dx : y;
                    const std::vector<float> a = bit_values(got[0], dt, n),
                                             b = bit_values(got[1], dt, n);
                    std::vector<double> bound(n); // |a| + |b| <= 6: inputs within +-3
                    for (std::size_t i = 0; i < n; ++i) bound[i] = 8 * u * 6.0 + rounding(dt, a[i]);
                    expect_within(b, a, bound, pass ? "backward" : "forward");
                }
            }
}

// SwiGLU: the CPU's expressions in its order; only exp differs (CUDA's expf, the CPU's Cephes
// exp, each within 2 ulp = 4 u relative), so e = exp(-g) within 8 u of each other, 1 + e and
// s = sigmoid(g) = 1 / (1 + e) with a rounding each: s within 12 u relative; out = g s u, two
// roundings more: 16 u |g s u| — doubled as a margin, 32 u |g s u|. dup = dy g s likewise,
// 32 u |dy g s|; dgate = dy u s (1 + g (1 - s)), whose last factor may cancel (near g = -1.28):
// bounded by the size of its terms, 64 u |dy u| s (1 + |g| (1 - s)). (Measured under the
// emulator in fp32: 3.6, 7.2 and 3.5 u of those sizes.) 16-bit outputs one rounding of values
// that close more. Sizes off and on the vector widths, pointers off the 16-byte grid (skip 1:
// the element path), gates within +-8 (sigmoid's tails).
TEST(CudaLlamaOps, SwigluForwardAndBackward) {
    MAKE_TWIN(t);
    for (const std::size_t n :
         {std::size_t(1000 * 3 + 7), std::size_t(3), std::size_t(64), std::size_t(1)})
        for (const std::int64_t skip : {0, 1})
            for (DType dt : kAll) {
                SCOPED_TRACE(testing::Message()
                             << dtype_name(dt) << " n " << n << " skip " << skip);
                const std::int64_t len = std::int64_t(n) + skip;
                const auto gate = random_values(n + skip, 41, 8.0f),
                           up = random_values(n + skip, 42, 2.0f),
                           dout = random_values(n + skip, 43);
                std::vector<float> out[2], dg[2], du[2], gs, us, dys;
                for (int side = 0; side < 2; ++side) {
                    Side& x = side ? t.gpu : t.cpu;
                    auto make = [&](const std::vector<float>& v) {
                        return skip_front(x.make(v, dt, {len}), skip);
                    };
                    const std::vector<float> nans(n + skip, NAN);
                    const Tensor tg = make(gate), tu = make(up), tdy = make(dout);
                    const Tensor to = make(nans), tdg = make(nans), tdu = make(nans);
                    x.ops->swiglu_forward(x.s(), to, tg, tu);
                    x.ops->swiglu_backward(x.s(), tdg, tdu, tdy, tg, tu);
                    out[side] = x.read(to), dg[side] = x.read(tdg), du[side] = x.read(tdu);
                    if (side == 0) gs = x.read(tg), us = x.read(tu), dys = x.read(tdy);
                }
                std::vector<double> bo(n), bg(n), bu(n);
                for (std::size_t i = 0; i < n; ++i) {
                    const double sg = 1 / (1 + std::exp(-double(gs[i]))); // sigmoid
                    const double g = std::fabs(gs[i]), v = std::fabs(us[i]), dy = std::fabs(dys[i]);
                    bo[i] = 32 * u * g * sg * v + rounding(dt, out[0][i]);
                    bg[i] = 64 * u * dy * v * sg * (1 + g * (1 - sg)) + rounding(dt, dg[0][i]);
                    bu[i] = 32 * u * dy * g * sg + rounding(dt, du[0][i]);
                }
                expect_within(out[1], out[0], bo, "out");
                expect_within(dg[1], dg[0], bg, "dgate");
                expect_within(du[1], du[0], bu, "dup");
            }
}

// RoPE's arguments are checked on both backends before anything is enqueued: an odd head_dim
// (no rotate-half pairs) and heads reaching past the row are refused, naming the shape.
TEST(CudaLlamaOps, RopeRefusesShapesItCannotRotate) {
    MAKE_TWIN(t);
    for (int side = 0; side < 2; ++side) {
        Side& x = side ? t.gpu : t.cpu;
        const Tensor tx = x.make(std::vector<float>(2 * 12, 1.0f), DType::f32, {2, 12});
        EXPECT_THROW(x.ops->rope_forward(x.s(), tx, 2, 2, 5, Rope{10000.0f}), Error);
        EXPECT_THROW(x.ops->rope_backward(x.s(), tx, 2, 3, 6, Rope{10000.0f}), Error);
        try {
            x.ops->rope_forward(x.s(), tx, 2, 3, 6, Rope{10000.0f});
            ADD_FAILURE() << "3 heads of 6 in rows of 12 accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("3 heads of 6"), std::string::npos) << e.what();
        }
        x.ops->rope_forward(x.s(), tx, 2, 2, 6, Rope{10000.0f}); // exactly the row: accepted
        EXPECT_EQ(x.read(tx)[0], 1.0f);                          // position 0: not rotated
    }
}
